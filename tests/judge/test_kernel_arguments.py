"""What an answer's kernel launch may be handed (`launch_hook.argument_problem`), and what the op
audit pauses (`op_audit.pause_triton_entry_points`): a GPU launch takes tensors, scalars, strings,
dtypes, descriptors and tuples of these, so anything else (a list of tensors, an object) reaching an
interpreted kernel body is `invalid_answer`; heuristics, autotune hooks and grids are answer code,
so the torch they run is RH-01, while Triton's launch and benchmarker stay paused."""

from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from kernelgym.judge import JudgeConfig, judge, launch_hook, op_audit
from kernelgym.judge.errors import classify_exception
from kernelgym.judge.launch_hook import ConstexprTensorError, KernelArgumentError, argument_problem
from kernelgym.judge.result import Status
from kernelgym.tasks import load_builtin

REDTEAM = Path(__file__).parents[1] / "redteam"
X = torch.zeros(8)


def _descriptor():
    from triton.tools.tensor_descriptor import TensorDescriptor

    return TensorDescriptor(X.view(2, 4), [2, 4], [4, 1], [2, 4])


@pytest.mark.parametrize("value", [
    None, 3, 2.5, True, "relu", X, torch.nn.Parameter(X), tl.float16, tl.pointer_type(tl.int32), tl.constexpr(64),
    (X, 3, (None, "a")), X.shape, triton.reinterpret(X, tl.int32), _descriptor(),
], ids=lambda v: type(v).__name__)
def test_what_a_gpu_launch_takes_passes(value):
    assert argument_problem(value, "arg") is None


class _Refs:
    pass


class _Lazy(torch.Tensor):  # a tensor subclass runs its own Python on every torch call the launch makes
    pass


@pytest.mark.parametrize("value, problem", [
    ([X, X], "is a list"),
    ({"x": X}, "is a dict"),
    (_Refs(), f"is a {__name__}._Refs"),
    (_Refs, "is a type"),
    (lambda: X, "is a function"),
    (torch.float32, "is a torch.dtype"),
    ((X, [X]), "is a list at arg[1]"),
    (tl.constexpr([X]), "is a list at arg.value"),
    (tl.constexpr(X), "holds a torch.Tensor at arg.value inside a tl.constexpr (a GPU does not compile it)"),
    (X.as_subclass(_Lazy), f"is a {__name__}._Lazy"),
    (triton.reinterpret(X.as_subclass(_Lazy), tl.int32), "wraps a _Lazy at arg.base, not a torch.Tensor"),
])
def test_anything_else_is_refused_naming_where(value, problem):
    assert argument_problem(value, "arg") == problem


def test_a_tensor_under_a_constexpr_is_refused_at_any_depth():
    assert argument_problem((1, (X,)), "T", constexpr=True) == (
        "holds a torch.Tensor at T[1][0] inside a tl.constexpr (a GPU does not compile it)")
    assert argument_problem(_descriptor(), "T", constexpr=True).startswith("holds a TensorDescriptor")
    assert argument_problem((1, "a", tl.float32), "T", constexpr=True) is None


def answer_kernel(x_ptr, out_ptr, n, T, BLOCK):
    pass


answer_kernel.__module__ = "candidate_answer"


class _Param:
    def __init__(self, name):
        self.name, self.is_constexpr = name, name in ("T", "BLOCK")


class _FakeJit:
    fn = answer_kernel
    arg_names = ["x_ptr", "out_ptr", "n", "T", "BLOCK"]
    params = [_Param(n) for n in arg_names]


@pytest.fixture
def launch(monkeypatch):
    """`launch_hook`'s wrapper around a fake `JITFunction.run` of an answer kernel."""
    monkeypatch.setitem(launch_hook._STATE, "module", "candidate_answer")
    launch_hook.take()
    yield lambda *args, **kwargs: launch_hook._wrap(lambda self, *a, **k: None)(_FakeJit(), *args, **kwargs)
    launch_hook.take()


def test_fake_launches_check_positional_and_keyword_arguments(launch):
    launch(X, X, 8, (1, 2), grid=(1,), warmup=False, BLOCK=64, num_warps=4)  # grid, options: Triton's
    assert launch_hook.take() == {"answer_kernel": 1}
    with pytest.raises(KernelArgumentError, match=r"kernel answer_kernel: argument 'out_ptr' is a list"):
        launch(X, [X], 8, 1, grid=(1,), warmup=False, BLOCK=64)
    with pytest.raises(KernelArgumentError, match=r"argument 'T' holds a torch.Tensor at T\[0\]"):
        launch(X, X, 8, T=(X,), grid=(1,), warmup=False, BLOCK=64)  # as a heuristic would add it
    with pytest.raises(ConstexprTensorError, match="tl.constexpr but got a torch.Tensor"):
        launch(X, X, 8, 1, X, grid=(1,), warmup=False)
    assert launch_hook.take() == {}  # refused launches are no evidence of a kernel


def test_refused_arguments_are_invalid_answers():
    assert classify_exception(KernelArgumentError("kernel k: ..."), "trial") == ("invalid_answer", "")
    assert classify_exception(ConstexprTensorError("kernel k: ..."), "trial") == ("invalid_answer", "")


# -- the op audit: what is paused --------------------------------------------------------------------
@pytest.fixture
def audit(monkeypatch):
    """`pause_triton_entry_points` on this process, undone afterwards."""
    import triton.testing
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, InterpretedFunction, Autotuner, Heuristics):
        monkeypatch.setattr(cls, "run", cls.run)
    for name in ("do_bench", "do_bench_cudagraph"):
        monkeypatch.setattr(triton.testing, name, getattr(triton.testing, name))
    op_audit.pause_triton_entry_points()
    return op_audit


def test_only_tritons_machinery_is_paused(audit):
    import triton.testing
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.interpreter import InterpretedFunction

    assert InterpretedFunction.run._kernelgym_paused and triton.testing.do_bench._kernelgym_paused
    assert not getattr(Heuristics.run, "_kernelgym_paused", False)
    assert not getattr(Autotuner.run, "_kernelgym_paused", False)


def test_a_launch_is_paused_but_its_grid_is_not(audit):
    def launch_run(self, *args, grid, warmup):
        torch.mul(X, 2)  # Triton's own work during a launch
        return grid({"x": X})

    run = audit._paused_launch(launch_run)
    with audit.recording():
        run(None, X, grid=lambda meta: (torch.add(meta["x"], 1).numel(),), warmup=False)
    assert audit.forbidden() == {"add": 1}


def test_a_benchmarker_is_paused_but_what_it_times_is_not(audit):
    def bench(fn, quantiles=None):
        fn()
        return torch.quantile(torch.tensor([1.0, 2.0]), torch.tensor(quantiles)).tolist()  # its statistics

    with audit.recording():
        audit._paused_benchmarker(bench)(lambda: torch.relu(X), quantiles=[0.5])
    assert audit.forbidden() == {"relu": 1}


@pytest.mark.parametrize("answer, expect", [
    ("exploits/rh01_matmul_heuristic_tensor_arg.py", "cheat"),
    ("exploits/rh01_relu_heuristic_tensor_arg.py", "cheat"),
    ("exploits/rh06_matmul_constexpr_list_torch_in_kernel.py", "invalid_answer"),
    ("exploits/rh06_conv2d_list_arg_class_in_kernel.py", "invalid_answer"),
    ("honest/relu_autotune_multi_config.py", "ok"),
    ("honest/mse_autotune_and_heuristics.py", "ok"),
    ("honest/matmul_square_autotune_grid_meta.py", "ok"),
    ("honest/sigmoid_heuristics_even.py", "ok"),
])
def test_judged_end_to_end_on_cpu_with_the_static_rules_off(answer, expect):
    code = (REDTEAM / answer).read_text()
    task = next(line.split(":", 1)[1].strip() for line in code.splitlines() if line.startswith("# task:"))
    result = judge(load_builtin(task)[0], code, JudgeConfig(engine="inprocess", device="cpu", static_checks=False, timeout_s=120))
    assert result.status.value == expect, result.message
    if expect == "cheat":
        assert any(c.rule == "RH-01" and c.stage == "runtime" for c in result.cheats), result.message
    if expect == "invalid_answer":
        assert "KernelArgumentError" in result.message and "is a list" in result.message, result.message
