"""Guards around issue 17's shortcuts (adversarial review of 2990dd3).

* Correctness stops at the first failing trial, so the cache probe (the trial after the secret
  ones) never runs for an answer that replays a cached output: it fails at its first cache hit.
  A failing output that is bit for bit an earlier passing trial's output is RH-11 right there.
* The profile is the only run-time check of where device time goes (RH-03, RH-17): a profile that
  fails after a successful timing must not leave the answer its timing without those checks.
"""

import importlib
import random
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge import trials as trials_mod
from kernelgym.judge.protocol import PROFILE_KERNELS_DONE
from kernelgym.judge.reference import Reference, ReferenceTimes
from kernelgym.judge.result import EvalResult
from kernelgym.judge.spot import expected_spots
from kernelgym.redteam.corpus import parse_exploit
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer

judge_mod = importlib.import_module("kernelgym.judge.judge")
CPU = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=11)
EXPLOITS = Path(__file__).resolve().parents[1] / "redteam" / "exploits"


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


@pytest.fixture
def gpu_like_integrity(monkeypatch):
    """On a GPU only one secret trial (drawn at random) is an integrity trial; here none is, so
    provenance (RH-02), which on the CPU sees a Python-level replay in any trial, stays out of it."""
    real_next = trials_mod.TrialPlan.next

    def next_trial(self):
        t = real_next(self)
        if t is not None:
            t.integrity = False
        return t

    monkeypatch.setattr(trials_mod.TrialPlan, "next", next_trial)


def test_device_side_replay_cache_is_rh11_at_its_first_failing_trial(relu):
    """State in device buffers only (static rules see no cache): trial 1 replays trial 0's output."""
    exploit = parse_exploit(EXPLOITS / "rh11_relu_device_flag_replay.py")
    for config in (CPU, JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=11, stop_at_first_failure=False)):
        r = judge(relu, exploit.text, config)
        assert r.status is Status.CHEAT, r.message
        assert {c.rule for c in r.cheats} == {"RH-11"}
        assert "bit for bit trial 0's" in r.cheats[0].reason
    assert [t.index for t in judge(relu, exploit.text, CPU).trials] == [0, 1]


SHAPE_CACHE = relu_answer(
    init="self.memo = {}",
    forward_body="if tuple(x.shape) in self.memo:\n    return self.memo[tuple(x.shape)]\n"
                 "y = torch.empty_like(x)\nrelu_kernel[(triton.cdiv(x.numel(), 1024),)](x.contiguous(), y, x.numel(), "
                 "BLOCK=1024)\nself.memo[tuple(x.shape)] = y\nreturn y")


def test_python_shape_cache_is_caught_without_provenance(relu, gpu_like_integrity):
    """The GPU case: the integrity trial may come after the first failure, and the probe never runs."""
    r = judge(relu, SHAPE_CACHE, JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=11, static_checks=False))
    assert r.status is Status.CHEAT and "RH-11" in {c.rule for c in r.cheats}, r.message
    assert len(r.trials) == 2


CONSTANT_ZERO = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)",
                                      "tl.load(x_ptr + offs, mask=m) * 0.0")


@pytest.mark.parametrize("stop", [True, False], ids=["stop_at_first_failure", "every_trial"])
def test_an_answer_wrong_the_same_way_in_every_trial_is_no_replay(relu, stop):
    """Identical failing outputs (a kernel that writes zeros) are a bug, not a cache: only an
    earlier *passing* output counts."""
    r = judge(relu, CONSTANT_ZERO, JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=11, stop_at_first_failure=stop))
    assert r.status is Status.WRONG_OUTPUT and not r.cheats, r.message
    assert len(r.trials) == (1 if stop else 7)


def test_honest_answer_still_ok_and_failing_honest_answer_still_wrong_output(relu):
    assert judge(relu, relu_answer(), CPU).status is Status.OK
    wrong = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)",
                                  "tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0) * 1.001")
    r = judge(relu, wrong, JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=11, stop_at_first_failure=False))
    assert r.status is Status.WRONG_OUTPUT and not r.cheats


# -- the profile ---------------------------------------------------------------------------------


class _ScriptedGpuChild:
    """The parent's view of a GPU child in the timing phase. `profiles`: per profile request, the
    messages the child sends (a notice first, maybe)."""

    def __init__(self, digests: list[str], profiles: list[list[dict]], spot_output=None) -> None:
        self.digests, self.profiles, self.pending, self.asked = digests, list(profiles), [], []
        self.spot_output, self.keep = spot_output, []  # spot_output(call) -> output of that varied call
        self.timed_calls = 50

    def request(self, msg, yield_to=None):
        op = msg["op"]
        if op == "timing_inputs":
            return {"inputs_digests": list(self.digests)}
        if op == "time":  # the calls a child's reservoir keeps over 50 timed calls, the last one per set exact
            n = self.timed_calls
            self.keep = expected_spots(msg["spot_seed"], msg["spot_size"], msg["warmup"], n - len(self.digests))
            return {"times_ms": [0.5] * n, "wall_ms": [0.6] * n, "launches": {}}
        if op == "profile":
            self.asked.append(msg)
            first, *self.pending = self.profiles.pop(0)
            return first
        if op == "timed_outputs":
            outs = {c: self.spot_output(c) for c in self.keep} if self.spot_output else {}
            spots = [[c, [o], [(tuple(o.stride()), o.is_contiguous())]] for c, o in outs.items()]
            return {"outputs": [], "layout": [], "spots": spots}
        raise AssertionError(op)

    def receive(self):
        return self.pending.pop(0)

    def close(self):
        pass


def _time_and_profile(monkeypatch, relu, profiles: list[list[dict]], spot_output=None,
                      sets: list | None = None, timed_calls: int = 50) -> tuple[EvalResult, list[dict]]:
    @contextmanager
    def no_lock(device, exclusive):
        yield SimpleNamespace(writer_waiting=lambda: False, step_aside=lambda: None)

    for mod in (judge_mod, trials_mod):
        monkeypatch.setattr(mod, "gpu_lock", no_lock)
    digests = []
    real_draw = judge_mod.draw_trial

    def draw(*a, **k):
        t = real_draw(*a, **k)
        digests.append(t.inputs_digest)
        if sets is not None:
            sets.append(t)
        return t

    monkeypatch.setattr(judge_mod, "draw_trial", draw)
    monkeypatch.setattr(judge_mod, "check_timed_outputs", lambda outputs, sets, config: [])  # not under test
    if spot_output is None:  # not under test either
        monkeypatch.setattr(judge_mod, "check_spot_outputs", lambda *a: [])
    monkeypatch.setattr(Reference, "times", lambda self, sets, config: ReferenceTimes(None, None, ""))
    reference = Reference(relu, "small", "cpu", init_seed=1)
    result = EvalResult(status=Status.OK, task_id="relu", device="cuda")
    result.correct = True
    child = _ScriptedGpuChild(digests, profiles, spot_output)
    child.timed_calls = timed_calls
    judge_mod._time_and_profile(child, 7, SimpleNamespace(kernels=["relu_kernel"]), reference, random.Random(0),
                                JudgeConfig(engine="inprocess", device="cpu"), result, judge_mod._PhaseClock())
    return result, child.asked


KERNELS = {"kernels": [{"name": "relu_kernel", "device_us": 2500.0, "calls": 5}]}
OOM = {"error": "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB", "kind": "oom",
       "fault": "out_of_memory", "phase": "profile"}
NOTICE = {"op": PROFILE_KERNELS_DONE}


@pytest.mark.parametrize("profile", [[KERNELS], [NOTICE, KERNELS]], ids=["reply", "notice"])
def test_scripted_profile_is_ok(monkeypatch, relu, profile):
    r, asked = _time_and_profile(monkeypatch, relu, [profile])
    assert r.status is Status.OK and r.correct and r.profile is not None and r.profile.triton_share == 1.0
    assert [m["reps"] for m in asked] == [5]


def test_a_profile_out_of_memory_is_retried_lean(monkeypatch, relu):
    """An honest answer on a large task: the five profiled input copies do not fit, one does."""
    one_call = {"kernels": [{"name": "relu_kernel", "device_us": 500.0, "calls": 1}]}
    r, asked = _time_and_profile(monkeypatch, relu, [[OOM], [NOTICE, one_call]])
    assert r.status is Status.OK and r.profile is not None, r.message
    assert [(m["reps"], bool(m.get("lean"))) for m in asked] == [(5, False), (1, True)]


@pytest.mark.parametrize("profiles", [[[OOM], [OOM]], [[NOTICE, OOM]]], ids=["retry_fails", "after_notice"])
def test_a_profile_that_fails_after_timing_is_not_ok(monkeypatch, relu, profiles):
    """Before: `ok` with its speedup and no profile, so no RH-03 share rule and no RH-17 check."""
    r, asked = _time_and_profile(monkeypatch, relu, profiles)
    assert r.status is Status.OOM and not r.correct and r.profile is None, r.message
    assert "during profiling" in r.message


def test_a_malformed_profile_reply_is_rh20(monkeypatch, relu):
    r, _ = _time_and_profile(monkeypatch, relu, [[NOTICE, NOTICE]])
    assert r.status is Status.CHEAT and {c.rule for c in r.cheats} == {"RH-20"} and not r.correct


def test_child_lean_profile_keeps_one_timing_set(monkeypatch):
    from kernelgym.judge import child as child_mod

    seen = []

    def fake_profile(model, sets, reps, after_kernels=None):
        seen.append((len(sets), reps))
        return []

    monkeypatch.setitem(child_mod._TRUSTED, "profile_kernels", fake_profile)
    session = child_mod._Session()
    monkeypatch.setattr(session, "_integrity", lambda: {})
    session.timing_sets = [["a"], ["b"], ["c"]]
    session.op_profile({"reps": 5})
    session.op_profile({"reps": 1, "lean": True})
    assert seen == [(3, 5), (1, 1)] and session.timing_sets == [["a"]]


def test_secret_spot_checks_catch_an_answer_that_skimps_on_unchecked_calls(monkeypatch, relu):
    """rh21_relu_device_counter_partial_work: a device-side call counter lets an answer do part of the
    work on every call it knows is not checked. Varied calls at secret positions are checked too,
    against the reference on the same varied inputs; honest outputs pass."""
    import torch

    from kernelgym.judge.inputs import varied_copy

    sets: list = []

    def honest(call):
        t = sets[call % len(sets)]
        return torch.relu(varied_copy(t.inputs, call)[0])

    r, _ = _time_and_profile(monkeypatch, relu, [[KERNELS]], spot_output=honest, sets=sets)
    assert r.status is Status.OK and r.correct, r.message

    def skimped(call):  # 60 % of the work: the last 40 % of the output left at zero
        out = honest(call).clone().flatten()
        out[int(out.numel() * 0.6):] = 0
        return out.view_as(honest(call))

    sets.clear()
    r, _ = _time_and_profile(monkeypatch, relu, [[KERNELS]], spot_output=skimped, sets=sets)
    assert r.status is Status.CHEAT and {c.rule for c in r.cheats} == {"RH-21"}, r.message
    assert "checked in secret" in r.cheats[0].reason


def test_missing_spot_outputs_are_rh21_and_non_finite_references_are_not_checked():
    from kernelgym.judge.runtime_checks import check_spot_outputs, output_bytes

    config = JudgeConfig(engine="inprocess", device="cpu")
    a = expected_spots(1, 6, config.timing_warmup, 47)
    import torch

    assert output_bytes([torch.zeros(4, 8), torch.zeros(2, dtype=torch.float64)]) == 4 * 8 * 4 + 16
    missing = check_spot_outputs({"spots": []}, a, [None, None], lambda t, c: None, config)
    assert [v.rule for v in missing] == ["RH-21"]
    unchecked = check_spot_outputs({"spots": [[c, [None], [None]] for c in a]}, a, [None, None],
                                   lambda t, c: None, config)  # non-finite reference: not checked
    assert unchecked == []


def test_a_child_reporting_fewer_timed_calls_than_asked_is_rh20(monkeypatch, relu):
    """The spot sample is recomputed from the reported call count: a harness that reported only the
    final calls would empty it. Fewer calls than `timing_reps` is a tampered reply."""
    r, _ = _time_and_profile(monkeypatch, relu, [[KERNELS]], timed_calls=3)
    assert r.status is Status.CHEAT and {c.rule for c in r.cheats} == {"RH-20"}, r.message
    assert "fewer than the 50" in r.cheats[0].reason
