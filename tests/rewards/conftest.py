import pytest

from kernelgym.judge.result import CheatVerdict, EvalResult, KernelTime, Profile, RuntimeStats, Status


def _stats(ms: float) -> RuntimeStats:
    return RuntimeStats(median_ms=ms, mean_ms=ms, std_ms=0.0, min_ms=ms, max_ms=ms, n=1)


def make_result(
    status: Status = Status.OK,
    speedup: float | None = 2.0,
    compile_speedup: float | None = None,
    share: float | None = 0.8,
    cheat: bool = False,
) -> EvalResult:
    """An EvalResult as the judge would build it: a pass carries runtimes, speedups and a profile."""
    passed = status is Status.OK
    profile = None
    if share is not None:
        profile = Profile(
            kernels=[
                KernelTime("relu_kernel", 100.0 * share, 1, True),
                KernelTime("aten::add", 100.0 * (1 - share), 1, False),
            ],
            total_device_us=100.0,
            triton_share=share,
        )
    return EvalResult(
        status=status,
        compiled=status not in (Status.INVALID_ANSWER, Status.COMPILE_ERROR),
        correct=passed,
        cheats=[CheatVerdict("RH-01", "torch.matmul in forward")] if cheat else [],
        runtime=_stats(1.0) if speedup is not None else None,
        reference_runtime=_stats(speedup) if speedup is not None else None,
        speedup_eager=speedup,
        speedup_compile=compile_speedup,
        profile=profile,
        timing_note="" if speedup is not None else "not measured: cpu run",
    )


@pytest.fixture
def result():
    return make_result
