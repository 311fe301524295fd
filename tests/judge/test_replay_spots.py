"""The replay's timing keeps a secret sample of varied timed calls for the judge to check (RH-21):
kernels can keep state past their buffers and skip the work on calls they count as unchecked.

The replay session's `replay_time` / `replay_timed_outputs` ops, run with host stand-ins for CUDA
events (`host_timing`, as in test_spot_checks) and a replayer whose "kernels" are torch functions."""

from types import SimpleNamespace

import pytest
import torch

from kernelgym.judge.child import host_copy, ship_outputs
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.inputs import varied_copy
from kernelgym.judge.replay_session import ReplayOps
from kernelgym.judge.runtime_checks import check_spot_outputs
from kernelgym.judge.spot import expected_spots
from tests.judge.test_spot_checks import host_timing  # noqa: F401 - a fixture


class _Replayer:
    """`prepare(args)` then `run()`, as `replay.Replayer`; `skip_after` calls, it stops working (zeros)
    on every call but the last of the measurement, as a kernel counting calls in allocator slack could."""

    def __init__(self, skip_from: int | None = None) -> None:
        self.calls, self.skip_from, self.args = 0, skip_from, None

    def prepare(self, args, poison=None):
        self.args, self.poison = args, poison

    def run(self):
        self.calls += 1
        x = self.args[0]
        if self.skip_from is not None and self.skip_from <= self.calls:
            return torch.zeros_like(x)
        return torch.relu(x)


class _Session(ReplayOps):
    def __init__(self, replayer, sets):
        self.role, self.replayers, self.timing_sets = "replay", {"main": (replayer, None)}, sets
        self.helpers = {"ship_outputs": ship_outputs, "host_copy": host_copy}
        self.code_path = ""
        self.hold_pool = None
        self.device = None  # no GPU here: time_calls times on the thread's current device (stood in for)


def _measure(replayer, seed=11, size=6, reps=30, warmup=2, pooled=False):
    sets = [[torch.randn(64)], [torch.randn(64)]]
    session = _Session(replayer, sets)
    if pooled:  # as `replay_timing_inputs` builds it on a GPU, with pageable buffers here
        from kernelgym.judge.pinned_hold import HoldPool, output_meta

        session.hold_pool = HoldPool(host_copy)
        assert session.hold_pool.allocate(output_meta(ship_outputs(torch.relu(sets[0][0]))), size + 2, "pageable")
    times = session.op_replay_time({"warmup": warmup, "reps": reps, "flush_bytes": 64, "spot_seed": seed,
                                    "spot_size": size})
    outputs = session.op_replay_timed_outputs({})
    if pooled:  # every kept output went into a buffer allocated before the measurement
        assert session.hold_pool.pooled == size + len(sets)
    spots = expected_spots(seed, size, warmup, len(times["times_ms"]) - len(sets))
    trials = [SimpleNamespace(inputs=s, expected=torch.relu(s[0]), distribution="normal") for s in sets]
    verdicts = check_spot_outputs(outputs, spots, trials, lambda t, call: torch.relu(varied_copy(t.inputs, call)[0]),
                                  JudgeConfig(device="cpu"))
    return outputs, spots, verdicts


@pytest.mark.parametrize("pooled", [False, True])
def test_the_replay_keeps_the_secret_sample_and_honest_calls_pass(host_timing, pooled):  # noqa: F811
    outputs, spots, verdicts = _measure(_Replayer(), pooled=pooled)
    assert [call for call, _, _ in outputs["spots"]] == spots and len(spots) == 6
    assert verdicts == []


def test_kernels_that_skip_unchecked_timed_calls_are_caught(host_timing):  # noqa: F811
    # Skims from the 10th call on (warm-up included): every varied call after it is zeros.
    _, _, verdicts = _measure(_Replayer(skip_from=10))
    assert [v.rule for v in verdicts] == ["RH-21"]


def test_spot_references_carry_the_trials_precision_bound():
    # The flat rule refused honest TF32 attention and matmul outputs of spot calls on an H100: the spot's
    # expected output gets the bound derived from the float64 reference, like a trial's.
    import random

    from kernelgym.judge.precision import derived_bound
    from kernelgym.judge.reference import Reference
    from kernelgym.judge.runtime_checks import spot_expected
    from kernelgym.judge.trials import draw_trial
    from kernelgym.tasks import load_builtin

    config = JudgeConfig(device="cpu")
    reference = Reference(load_builtin("matmul_square")[0], "small", "cpu", init_seed=5)
    trial = draw_trial(reference, random.Random(3), config, 1, grad=False)
    expected = spot_expected(reference)(trial, 7)
    assert derived_bound(expected) is not None and reference.matmul_like


def test_the_measurement_reports_where_its_host_time_went(host_timing):  # noqa: F811
    session = _Session(_Replayer(), [[torch.randn(64)], [torch.randn(64)]])
    reply = session.op_replay_time({"warmup": 2, "reps": 30, "flush_bytes": 64, "spot_seed": 5, "spot_size": 6})
    costs = reply["host_s"]
    assert set(costs) == {"vary", "prepare", "timed", "hold"} and all(v >= 0 for v in costs.values())
    assert costs["timed"] >= sum(reply["wall_ms"]) / 1e3 * 0.999  # every timed call's wall time is counted


def test_without_a_time_budget_each_kept_output_is_copied_once(host_timing):  # noqa: F811
    copies = []

    def counting_copy(shipped):
        copies.append(1)
        return host_copy(shipped)

    sets = [[torch.randn(64)], [torch.randn(64)]]
    session = _Session(_Replayer(), sets)
    session.helpers = {"ship_outputs": ship_outputs, "host_copy": counting_copy}
    times = session.op_replay_time({"warmup": 2, "reps": 50, "flush_bytes": 64, "spot_seed": 9, "spot_size": 6})
    outputs = session.op_replay_timed_outputs({})
    assert [call for call, _, _ in outputs["spots"]] == expected_spots(9, 6, 2, len(times["times_ms"]) - len(sets))
    assert len(copies) == 6 + len(sets)  # the six kept calls and the last call per set, nothing replaced


def test_rh03_weighs_torch_work_but_not_input_preparation():
    from kernelgym.judge.runtime_checks import kernel_share

    prep_heavy = [{"name": "aten.clone.default", "device_us": 88.0, "own": False, "prep": True},
                  {"name": "max_kernel", "device_us": 12.0, "own": True, "prep": False}]
    assert kernel_share(prep_heavy, layout_task=False) == 1.0  # FlagGems' dim_compress before its reduction
    assert kernel_share(prep_heavy, layout_task=True) == pytest.approx(0.12)  # a transpose task: the copy is the job
    steered = [{"name": "aten.masked_fill_.Scalar", "device_us": 62.0, "own": False, "prep": False},
               {"name": "mask_kernel", "device_us": 38.0, "own": True, "prep": False}]
    assert kernel_share(steered, layout_task=False) == pytest.approx(0.38)
    assert kernel_share([{"name": "c", "device_us": 5.0, "own": False, "prep": True}], layout_task=False) == 0.0
