"""Pure run-time rules: physics floor, profile coverage and escaped work, input variation, probes."""

import torch

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.inputs import swap_probe, varied_copy
from kernelgym.judge.result import KernelTime, Profile, RuntimeStats
from kernelgym.judge.runtime_checks import physics_floor_verdicts, profile_verdicts, settings_verdicts


def _rt(ms):
    return RuntimeStats.from_samples([ms])


def test_physics_floor_flags_impossible_time_only():
    x = torch.empty(64 << 20, dtype=torch.float32)  # 256 MiB read and 256 MiB written per call
    io = [([x], x)]
    # H100: 537 MB / (3.35 TB/s * 2) = 0.080 ms
    assert [v.rule for v in physics_floor_verdicts(_rt(0.005), io, "NVIDIA H100 80GB HBM3")] == ["RH-26"]
    assert physics_floor_verdicts(_rt(0.2), io, "NVIDIA H100 80GB HBM3") == []
    assert physics_floor_verdicts(None, io, "NVIDIA H100 80GB HBM3") == []
    # small outputs still have a floor when the inputs are large (matvec skipping its work)
    io_matvec = [([torch.empty(4096, 4096), torch.empty(4096)], torch.empty(4096))]
    assert [v.rule for v in physics_floor_verdicts(_rt(0.001), io_matvec, "NVIDIA H100 80GB HBM3")] == ["RH-26"]
    # unknown GPUs get a generous bandwidth: 0.03 ms is still possible there
    assert physics_floor_verdicts(_rt(0.03), io, "Some Future GPU") == []


def _profile(own_us, other_us):
    rows = [KernelTime("k_own", own_us, 5, True), KernelTime("aten_mm", other_us, 5, False)]
    total = own_us + other_us
    return Profile(kernels=rows, total_device_us=total, triton_share=own_us / total)


def test_profile_share_rule_and_partial_replacement():
    cfg = JudgeConfig(device="cpu")
    prof = _profile(own_us=100.0, other_us=900.0)
    assert [v.rule for v in profile_verdicts(prof, 5, _rt(0.2), cfg)] == ["RH-03"]
    assert profile_verdicts(prof, 5, _rt(0.2), cfg, share_rule=False) == []


def test_profile_sees_work_that_escapes_the_timed_window():
    cfg = JudgeConfig(device="cpu")
    prof = _profile(own_us=5000.0, other_us=0.0)  # 1 ms of kernels per call over 5 calls
    assert [v.rule for v in profile_verdicts(prof, 5, _rt(0.5), cfg)] == ["RH-17"]
    # an honest call is never faster than its kernels' device time on a warm L2
    assert profile_verdicts(prof, 5, _rt(1.04), cfg) == []
    side_stream = RuntimeStats(median_ms=1.0, mean_ms=1.0, std_ms=0.1, min_ms=0.7, max_ms=1.2, n=50)
    assert [v.rule for v in profile_verdicts(prof, 5, side_stream, cfg)] == ["RH-17"]


def test_settings_verdict_codes():
    v = settings_verdicts(["cuda.matmul.allow_tf32", "num_threads"], "trial 0")
    assert {x.rule for x in v} == {"RH-14", "RH-24"}
    assert settings_verdicts([], "trial 0") == []


def test_varied_copy_never_repeats_values_and_keeps_structure():
    x = torch.tril(torch.randn(8, 8))
    idx = torch.arange(5)
    a, b = varied_copy([x, idx], 0), varied_copy([x, idx], 1)
    assert not torch.equal(a[0], x) and not torch.equal(a[0], b[0])
    assert torch.equal(torch.tril(a[0]), a[0])  # zeros stay zeros
    assert torch.equal(a[1], idx) and a[1].data_ptr() != idx.data_ptr()


def test_swap_probe_is_deterministic_keeps_values_and_changes_positions():
    x = torch.randn(1000)
    p1, p2 = swap_probe([x], 7)[0], swap_probe([x], 7)[0]
    assert torch.equal(p1, p2) and not torch.equal(p1, x)
    assert torch.equal(p1.sort().values, x.sort().values)  # same multiset: still in the task's domain
    assert torch.equal(x, x.clone())  # the original is untouched


def test_swap_probe_leaves_the_first_and_last_elements_in_place():
    # a cache keyed on the ends would miss (and so pass) whenever a swap touched them: that made
    # the RH-11 probe miss such a cache about once in 75 runs on a 2,400-element input
    x = torch.randn(2400)
    for seed in range(300):
        p = swap_probe([x], seed)[0]
        assert p[0] == x[0] and p[-1] == x[-1] and not torch.equal(p, x)
    tiny = torch.tensor([1.0, 2.0, 3.0])  # no interior worth the name: any position may move
    assert any(not torch.equal(swap_probe([tiny], s)[0], tiny) for s in range(20))


def test_constant_output_on_a_near_degenerate_task_is_rh12():
    from kernelgym.judge.runtime_checks import constant_output_verdict

    expected = torch.randn(64) * 1e-9  # passes against zeros at atol 1e-4
    assert [v.rule for v in constant_output_verdict(expected, torch.zeros(64), 0)] == ["RH-12"]
    assert constant_output_verdict(expected, expected.clone(), 0) == []  # honest: varied like the reference
    assert constant_output_verdict(torch.zeros(64), torch.zeros(64), 0) == []  # the reference is constant too


def test_wall_seconds_does_not_count_nested_phases_twice():
    from kernelgym.judge.result import EvalResult, Status

    r = EvalResult(status=Status.OK, phase_seconds={"parse": 0.5, "compile": 10.0, "reference": 6.0, "correctness": 4.0})
    assert r.wall_seconds == 14.5


def test_wall_seconds_counts_the_replays_timed_outputs_once():
    # the replay engine checks the timed outputs inside `timing` (the twenty-first session's throughput phases
    # summed 1,094 slot-seconds for 915 of evaluations); the in-process engine checks them after it
    from kernelgym.judge.result import EvalResult, Status

    phases = {"compile": 2.0, "correctness": 3.0, "timing": 5.0, "timed_outputs": 4.0}
    assert EvalResult(status=Status.OK, engine="replay", phase_seconds=phases).wall_seconds == 10.0
    assert EvalResult(status=Status.OK, engine="inprocess", phase_seconds=phases).wall_seconds == 14.0


def test_profile_share_exactly_at_the_threshold_is_rh03():
    # the answer's kernels must carry the majority: half the device time is not a majority
    cfg = JudgeConfig(device="cpu")
    assert [v.rule for v in profile_verdicts(_profile(own_us=500.0, other_us=500.0), 5, None, cfg)] == ["RH-03"]
    assert profile_verdicts(_profile(own_us=501.0, other_us=499.0), 5, None, cfg) == []
