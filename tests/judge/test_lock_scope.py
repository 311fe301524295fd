"""What the judge does under the GPU's shared side and what it does without it (issue 17).

A measurement (the exclusive side) must wait for every share to end, so a share should cover the
kernels of ours and the child's trials, not host work. On the CPU nothing is locked; here a
recording lock stands in for `gpu_lock` (whatever the device) and the judge's steps note whether
they ran inside it.
"""

import contextlib
import importlib
import random
import threading
from types import SimpleNamespace

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge import reference as reference_mod
from kernelgym.judge import trials as trials_mod
from kernelgym.judge.protocol import PROFILE_KERNELS_DONE
from kernelgym.judge.reference import Reference, ReferenceTimes
from kernelgym.judge.result import EvalResult
from kernelgym.judge.sandbox import CandidateProcess
from kernelgym.tasks import Task, load_builtin
from tests.answers import relu_answer

CPU = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60)
judge_mod = importlib.import_module("kernelgym.judge.judge")  # the package re-exports the function under this name


class _Hold:
    def writer_waiting(self) -> bool:
        return False

    def step_aside(self) -> None:  # pragma: no cover - never asked: no writer waits
        raise AssertionError("no measurement is queued in these tests")


class RecordingLock:
    """`gpu_lock`'s shape: nested shares of one thread are one hold, as in the real lock."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.holds = 0
        self.exclusive = 0

    def held(self) -> int:
        """The id of the outermost hold this thread is in, 0 when none."""
        return getattr(self._local, "hold", 0) if getattr(self._local, "depth", 0) else 0

    def held_exclusive(self) -> bool:
        return bool(self.held()) and self._local.exclusive

    @contextlib.contextmanager
    def __call__(self, device: str, exclusive: bool):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            self.holds += 1
            self._local.hold = self.holds
            self._local.exclusive = exclusive
            self.exclusive += exclusive
        self._local.depth = depth + 1
        try:
            yield _Hold()
        finally:
            self._local.depth -= 1


@pytest.fixture
def lock(monkeypatch):
    rec = RecordingLock()
    for mod in (judge_mod, reference_mod, trials_mod):
        monkeypatch.setattr(mod, "gpu_lock", rec)
    return rec


@pytest.fixture
def notes(monkeypatch, lock):
    """(step, hold id) for the steps this test watches; hold id 0: outside any hold."""
    seen: list[tuple[str, int]] = []

    real_load = Task.load_module

    def load_module(self, *a, **k):
        module = real_load(self, *a, **k)
        if hasattr(module, "Model"):
            base = module.Model

            class Watched(base):
                def __init__(self, *args, **kwargs):
                    seen.append(("model_init", lock.held()))
                    super().__init__(*args, **kwargs)

                def to(self, *args, **kwargs):
                    seen.append(("model_to_device", lock.held()))
                    return super().to(*args, **kwargs)

                def forward(self, *args):
                    seen.append(("reference_forward", lock.held()))
                    return super().forward(*args)

            module.Model = Watched
        return module

    monkeypatch.setattr(Task, "load_module", load_module)

    def watch(module, name, step):
        real = getattr(module, name)

        def watched(*a, **k):
            seen.append((step, lock.held()))
            return real(*a, **k)

        monkeypatch.setattr(module, name, watched)

    watch(judge_mod, "compare_outputs", "compare")
    watch(judge_mod, "check_trial_reply", "reply_checks")
    watch(judge_mod, "torch_ops_verdicts", "reply_checks")
    real_draw = Reference.draw

    def draw(self, *a, **k):
        seen.append(("draw", lock.held()))
        return real_draw(self, *a, **k)

    monkeypatch.setattr(Reference, "draw", draw)
    real_request = CandidateProcess.request

    def request(self, msg, yield_to=None):
        seen.append((f"child_{msg['op']}", lock.held()))
        return real_request(self, msg, yield_to=yield_to)

    monkeypatch.setattr(CandidateProcess, "request", request)
    return seen


def _steps(notes, step):
    return [hold for s, hold in notes if s == step]


def test_host_work_runs_outside_the_gpu_share(relu_task, notes, lock):
    r = judge(relu_task, relu_answer(), CPU)
    assert r.status is Status.OK, r.message
    # the reference model is built on the host outside any share; only its move to the GPU holds one
    assert _steps(notes, "model_init") and all(h == 0 for h in _steps(notes, "model_init"))
    assert _steps(notes, "model_to_device") and all(h for h in _steps(notes, "model_to_device"))
    # checks of the child's reply (digests, threads, launches, op audit) are host work: no share
    assert _steps(notes, "reply_checks") and all(h == 0 for h in _steps(notes, "reply_checks"))
    # building the answer's model happens in the child with no kernel of ours to protect
    assert all(h == 0 for h in _steps(notes, "child_build"))
    assert lock.exclusive == 0  # the CPU path never measures


def test_kernel_work_runs_inside_a_share(relu_task, notes):
    judge(relu_task, relu_answer(), CPU)
    for step in ("reference_forward", "compare", "child_trial", "draw"):
        holds = _steps(notes, step)
        assert holds and all(h for h in holds), f"{step} ran outside the GPU share"


def test_each_draw_holds_its_own_share(relu_task, notes):
    """A queued measurement waits for one draw, never for a whole plan of trials, and a draw is
    never inside a trial's share (the child's run) or a comparison's."""
    judge(relu_task, relu_answer(), CPU)
    draws = _steps(notes, "draw")
    assert len(draws) == 6 and len(set(draws)) == len(draws)
    others = set(_steps(notes, "child_trial")) | set(_steps(notes, "compare"))
    assert not set(draws) & others


class ScriptedChild:
    """The parent's view of a GPU child whose replies are scripted: what the timing phase asks
    and receives, each noted with the hold it happened in."""

    def __init__(self, lock: RecordingLock, notice: bool) -> None:
        self.lock, self.notice, self.log = lock, notice, []
        self.pending: list[dict] = []

    def request(self, msg, yield_to=None):
        self.log.append((f"request_{msg['op']}", self.lock.held(), self.lock.held_exclusive()))
        op = msg["op"]
        if op == "timing_inputs":
            return {"inputs_digests": []}
        if op == "time":
            return {"times_ms": [0.5] * 50, "wall_ms": [0.6] * 50, "launches": {}}
        if op == "profile":
            final = {"kernels": [{"name": "relu_kernel", "device_us": 2500.0, "calls": 5}]}
            if self.notice and msg.get("notify"):
                self.pending.append(final)
                return {"op": PROFILE_KERNELS_DONE}
            return final
        if op == "timed_outputs":
            return {"outputs": [], "layout": []}
        raise AssertionError(op)

    def receive(self):
        self.log.append(("receive", self.lock.held(), self.lock.held_exclusive()))
        return self.pending.pop(0)

    def close(self):
        self.log.append(("close", self.lock.held(), False))


@pytest.mark.parametrize("notice", [True, False], ids=["child_notifies", "no_notice"])
def test_exclusive_hold_ends_when_the_profiled_kernels_are_done(relu_task, lock, monkeypatch, notice):
    """Timing and profile requests run under the exclusive side; the profile's reply, which the
    child sends after the profiler's teardown, is read after the hold ends. A child that sends
    no notice (an old one, or one whose profile failed) still gets one exclusive hold for both."""
    monkeypatch.setattr(Reference, "times", lambda self, sets, config: ReferenceTimes(None, None, ""))
    reference = Reference(relu_task, "small", "cpu", init_seed=1)
    child = ScriptedChild(lock, notice)
    result = EvalResult(status=Status.OK, task_id="relu", device="cuda")
    judge_mod._time_and_profile(child, 7, SimpleNamespace(kernels=["relu_kernel"]), reference, random.Random(0),
                                JudgeConfig(engine="inprocess", device="cpu"), result, judge_mod._PhaseClock())
    by_step = {}
    for step, hold, exclusive in child.log:
        by_step.setdefault(step, []).append((hold, exclusive))
    (time_hold,) = by_step["request_time"]
    (profile_hold,) = by_step["request_profile"]
    assert time_hold[1] and profile_hold == time_hold  # one exclusive hold for both
    assert all(h and not x for h, x in by_step["request_timing_inputs"] + by_step["request_timed_outputs"])
    if notice:
        assert by_step["receive"] == [(0, False)]  # the profile reply: outside every hold
    else:
        assert "receive" not in by_step
    assert lock.exclusive == 1
    assert result.profile is not None and result.profile.triton_share == 1.0


def test_child_profile_notifies_before_its_reply(monkeypatch):
    """The child's side: the notice goes out once the profiled calls are done, before the profile
    reply is built, and only when the parent asked for it."""
    from kernelgym.judge import child as child_mod

    sent = []

    def fake_profile(model, sets, reps, after_kernels=None):
        sent.append("kernels ran")
        if after_kernels is not None:
            after_kernels()
        sent.append("profiler read")
        return [{"name": "k", "device_us": 1.0, "calls": reps}]

    monkeypatch.setitem(child_mod._TRUSTED, "profile_kernels", fake_profile)
    session = child_mod._Session()
    monkeypatch.setattr(session, "_integrity", lambda: {})
    session.notify = sent.append
    reply = session.op_profile({"reps": 5, "notify": True})
    assert sent == ["kernels ran", {"op": PROFILE_KERNELS_DONE}, "profiler read"]
    assert reply["kernels"][0]["calls"] == 5
    sent.clear()
    session.op_profile({"reps": 5})
    assert sent == ["kernels ran", "profiler read"]


@pytest.fixture(scope="module")
def relu_task():
    return load_builtin("relu")[0]


def test_cupti_starts_once_per_candidate_process(monkeypatch):
    """A warm process starts CUPTI before it is handed out; `build` must not pay another profiler
    session for it (set-up and teardown of an empty profile, in every evaluation's latency)."""
    from kernelgym.judge import child as child_mod

    started = []
    monkeypatch.setattr(child_mod, "_PROFILER_STARTED", False)
    monkeypatch.setattr(child_mod, "_start_profiler", lambda: started.append(1))
    child_mod._warm_profiler()  # the warm-up
    child_mod._warm_profiler()  # build
    assert started == [1]


def test_replay_engine_runs_child_kernels_inside_a_share(relu_task, notes, monkeypatch):
    """Judge v4: the record (the answer's forward, warm-up and autotuning included) and each replayed
    trial run kernels in child processes; a neighbour's measurement must not be timed beside them."""
    replay_judge_mod = importlib.import_module("kernelgym.judge.replay_judge")
    real = replay_judge_mod.compare_outputs

    def compare(*a, **k):
        notes.append(("compare", judge_mod.gpu_lock.held()))
        return real(*a, **k)

    monkeypatch.setattr(replay_judge_mod, "compare_outputs", compare)
    r = judge(relu_task, relu_answer(), JudgeConfig(engine="replay", device="cpu", timeout_s=60))
    assert r.status is Status.OK, r.message
    for step in ("child_record", "child_replay_trial", "compare"):
        holds = _steps(notes, step)
        assert holds and all(h for h in holds), f"{step} ran outside the GPU share"
    assert all(h == 0 for h in _steps(notes, "child_build"))  # the model's __init__: host work
    # each trial's replay and its comparison share one hold or two, never one with a draw
    assert not set(_steps(notes, "draw")) & set(_steps(notes, "child_replay_trial"))
