"""GPU-only behaviour: real timing, profiling and CUDA faults. Run with `python -m pytest -m gpu`."""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer

pytestmark = pytest.mark.gpu

GPU = JudgeConfig(device="cuda", timeout_s=120, time_compile_baseline=False)
UNCHECKED = JudgeConfig(device="cuda", timeout_s=120, time_compile_baseline=False, static_checks=False, profile=False)


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


def test_ok_answer_is_timed_and_profiled(relu):
    r = judge(relu, relu_answer(), GPU)
    assert r.status is Status.OK, r.message
    assert r.size == "full" and r.gpu_name
    assert r.runtime.median_ms > 0 and r.reference_runtime.median_ms > 0.05
    assert 0.5 < r.speedup_eager < 2.0
    assert r.profile.triton_share > 0.9
    assert any(k.own and k.name.startswith("relu_kernel") for k in r.profile.kernels)


def test_reference_timing_is_cached(relu):
    judge(relu, relu_answer(), GPU)
    r = judge(relu, relu_answer(), GPU)
    assert r.phase_seconds["reference_timing"] < 0.5


def test_torch_compute_hidden_from_static_rules_is_caught_at_run_time(relu):
    # token Triton kernel plus torch doing the work: only the profile can see it (RH-03)
    answer = relu_answer("y = torch.relu(x) + 0.0\nx = y")
    r = judge(relu, answer, JudgeConfig(device="cuda", timeout_s=120, time_compile_baseline=False,
                                         static_checks=False))
    # Under replay the recording lists torch's compute (RH-01) before any trial; the ghost replay (RH-02:
    # output still right with the kernel disabled) and the profile share (RH-03) come later. Any of them
    # is the run-time catch this test is about.
    assert r.status is Status.CHEAT and {c.rule for c in r.cheats} & {"RH-01", "RH-02", "RH-03"}, (r.status, r.message)


def test_illegal_memory_access_is_a_crash(relu):
    answer = relu_answer().replace("tl.store(out_ptr + offs,", "tl.store(out_ptr + offs + 10**12,")
    r = judge(relu, answer, UNCHECKED)
    assert r.status is Status.CRASHED and r.fault in ("cuda_illegal_address", "cuda_error"), (r.fault, r.error)
    assert sum(r.phase_seconds.values()) < 60


def test_device_assert_is_a_crash(relu):
    answer = relu_answer().replace("@triton.jit", "@triton.jit(debug=True)").replace(
        "    m = offs < n\n", "    m = offs < n\n    tl.device_assert(offs < 0, 'planted assert')\n")
    r = judge(relu, answer, UNCHECKED)
    assert r.status is Status.CRASHED and r.fault in ("cuda_device_assert", "cuda_error"), (r.fault, r.error)


def test_gpu_oom(relu):
    r = judge(relu, relu_answer("big = torch.empty(10**13, device=x.device)"), UNCHECKED)
    assert r.status is Status.OOM


def test_timeout_on_gpu(relu):
    cfg = JudgeConfig(device="cuda", timeout_s=20, time_compile_baseline=False, static_checks=False)
    r = judge(relu, relu_answer("while True:\n    pass"), cfg)
    assert r.status is Status.TIMEOUT


def test_segfault_on_gpu(relu):
    r = judge(relu, relu_answer("import ctypes\nctypes.string_at(0)"), UNCHECKED)
    assert r.status is Status.CRASHED and r.fault == "signal:SIGSEGV"


def test_judge_still_works_after_faults(relu):
    assert judge(relu, relu_answer(), GPU).status is Status.OK


def test_a_forked_warm_process_has_compiled_the_warm_kernel_and_judges_like_a_fresh_one(relu):
    from kernelgym.worker.warm_pool import WarmPool

    with WarmPool("cuda:0", 1) as pool:
        assert pool.wait_ready(timeout=120), pool.stats()
        assert pool.stats()["fork_server"] is not None
        (proc,) = list(pool._ready)
        assert any((proc.scratch / "triton").iterdir())  # the warm-up kernel, in its private cache
        warm = judge(relu, relu_answer(), GPU)
    assert pool.stats()["handed_out"] == 2  # judge v4: the answer's process, then the replay's
    assert warm.status is Status.OK, warm.message
    assert warm.profile.triton_share > 0.9
