"""A request that runs long steps aside (its process stopped) for a queued measurement."""

import time

from kernelgym.judge.reference import Reference
from kernelgym.judge.sandbox import CandidateProcess, YIELD_GRACE_S
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin

# 1.5 s of CPU time before the real forward: a stopped process accrues none (a sleep would run on)
SLOW = "\nimport time as _t\n_forward = ModelNew.forward\n" \
       "def _slow(self, *a):\n    t0 = _t.process_time()\n    while _t.process_time() - t0 < 1.5:\n        pass\n" \
       "    return _forward(self, *a)\nModelNew.forward = _slow\n"
PAUSE_S = 2.0


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


class _FakeHold:
    """A share of a GPU with a measurement waiting the first `asides` times it is asked: records
    what the child was doing and how long it stood aside."""

    def __init__(self, pid_of, asides=2):
        self.pid_of, self.states, self.asides, self.left, self.paused_s = pid_of, [], 0, asides, 0.0

    def writer_waiting(self):
        return self.left > 0

    def step_aside(self):
        t0 = time.monotonic()
        self.asides += 1
        self.left -= 1
        time.sleep(0.2)
        self.states.append(_state(self.pid_of()))
        time.sleep(PAUSE_S - 0.2)
        self.paused_s += time.monotonic() - t0


def test_a_slow_trial_is_paused_for_a_measurement_and_keeps_its_time(tmp_path):
    task = load_builtin("relu")[0]
    ref = Reference(task, "small", "cpu", init_seed=1)
    code = tmp_path / "answer.py"
    code.write_text(builtin_answer_path("relu").read_text() + SLOW)
    # The limit is not what is tested (a loaded machine may take far longer than 1.5 s of CPU): the
    # deadline's bookkeeping is, and that the process is stopped while it stands aside.
    with CandidateProcess(tmp_path, "cpu", time.monotonic() + 600, 1 << 20, 1 << 30) as child:
        reply = child.request({"op": "load", "code_path": str(code), "device": "cpu", "init_inputs": ref.init_inputs,
                               "init_seed": ref.init_seed, "num_inputs": ref.num_inputs(),
                               "task_source": task.source, "task_size": "small"})
        assert reply.get("ok"), reply
        hold = _FakeHold(lambda: child.proc.pid)
        t0 = time.monotonic()
        child.deadline = t0 + 600
        reply = child.request({"op": "trial", "index": 0, "seed": 5, "distribution": "task", "grad": False},
                              yield_to=hold)
        took = time.monotonic() - t0
        moved = child.deadline - (t0 + 600)
    assert "error" not in reply, reply
    assert hold.asides >= 1 and set(hold.states) == {"T"}, hold.states  # stopped while it stood aside
    assert took >= 1.5 + PAUSE_S * hold.asides - 0.1, "the answer ran while it was meant to be stopped"
    assert moved >= hold.paused_s, "the pauses must not count against the answer's time limit"
    assert YIELD_GRACE_S < 1.5
