"""Triton's GPU front end judges each interpreted launch first (`kernelgym.judge.front_end`): what an H100
refuses to compile (seen on an H200 with triton 3.6) is refused on the CPU too, with the GPU's verdict,
and honest kernels (constexpr globals, JIT helpers, Triton's standard library) still run.

Kernels in this process under `TRITON_INTERPRET=1` after `make_interpreter_faithful()`, then whole
answers through the judge's CPU child (both engines where the engine matters).
"""

import pytest
import torch
import triton
import triton.language as tl
from triton.compiler import CompilationError

from kernelgym.judge import JudgeConfig, Status, front_end, judge
from kernelgym.judge.interpreter import interpreting, make_interpreter_faithful
from kernelgym.judge.launch_hook import ForgedPointerError
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer

pytestmark = pytest.mark.skipif(not interpreting(), reason="runs Triton's CPU interpreter")
make_interpreter_faithful()

SCALE = 2.0
CSCALE = tl.constexpr(2.0)


@triton.jit
def scale_by_plain_global(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


@triton.jit
def _times_cscale(x):
    return x * CSCALE


@triton.jit
def scale_and_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    total = tl.sum(x, axis=0) + x.max() - tl.max(x, 0)  # Triton's library, free function and tensor member
    tl.store(out_ptr + offs, _times_cscale(x) + total, mask=offs < n)


@triton.jit(noinline=True)
def _load_block(p, offs, mask):
    return tl.load(p + offs, mask=mask)


@triton.jit
def copy_through_noinline(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, _load_block(x_ptr, offs, offs < n), mask=offs < n)


@triton.jit
def if_offset_pointer(x_ptr, out_ptr, k):
    if x_ptr - k:
        tl.store(out_ptr, 1.0)


def test_a_plain_global_is_refused_as_the_gpu_compiler_refuses_it():
    x, out = torch.randn(100), torch.empty(100)
    with pytest.raises(CompilationError, match="Cannot access global variable SCALE"):
        scale_by_plain_global[(1,)](x, out, 100, BLOCK=128)


_FNS_HELD = []


@triton.jit
def _held_noop():
    pass


_FNS_HELD.append(_held_noop)  # through a list: the code generator's dependency finder never sees it


@triton.constexpr_function
def _calls_a_jit_function_and_catches():
    try:
        _FNS_HELD[0]()  # on a GPU this raises too ("outside of the scope of a kernel"), and is caught the same way
    except Exception:  # noqa: BLE001 - the point of the test
        pass
    return 1


@triton.jit
def caught_refusal_then_plain_global(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    GAP: tl.constexpr = _calls_a_jit_function_and_catches()
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE * GAP, mask=offs < n)


def test_a_refusal_the_answer_caught_does_not_make_a_later_error_inconclusive():
    # Red-team round s26: a constexpr_function that caught the check's refusal marked the check inconclusive, so
    # the plain global the GPU refuses ran as Python on the CPU.
    x = torch.ones(8)
    with pytest.raises(CompilationError, match="SCALE"):
        caught_refusal_then_plain_global[(1,)](x, torch.empty_like(x), 8, BLOCK=8)


def test_a_noinline_helper_given_blocks_is_refused():
    x, out = torch.randn(100), torch.empty(100)
    with pytest.raises(CompilationError, match="marked noinline, but was called with non-scalar argument"):
        copy_through_noinline[(1,)](x, out, 100, BLOCK=128)


def test_an_offset_pointer_as_a_condition_is_a_forged_pointer_as_on_a_gpu():
    # On a GPU the truth test is a tt.ptr_to_int of `x_ptr - k` in the TTIR, refused by the launch hook.
    x, out = torch.randn(4), torch.zeros(1)
    with pytest.raises(ForgedPointerError, match=r"kernel if_offset_pointer: .*\[tt\.ptr_to_int\]"):
        if_offset_pointer[(1,)](x, out, 3)


def test_honest_kernels_run_after_refusals_and_triton_language_is_left_as_it_was():
    x, out = torch.randn(100), torch.empty(100)
    for refused in (lambda: scale_by_plain_global[(1,)](x, out, 100, BLOCK=128),
                    lambda: copy_through_noinline[(1,)](x, out, 100, BLOCK=128)):
        with pytest.raises(CompilationError):
            refused()
    for n, block in ((100, 128), (64, 64)):  # two specialisations, each checked and run
        scale_and_sum[(1,)](x, out, n, BLOCK=block)
        torch.testing.assert_close(out[:n], x[:n] * 2.0 + x[:n].sum())
    assert tl.core.is_builtin(tl.core.load) and tl.core.is_builtin(tl.tensor.__add__)


def test_each_specialisation_is_checked_once(monkeypatch):
    calls = []
    compile_ = front_end._compile
    monkeypatch.setattr(front_end, "_compile", lambda *a: calls.append(a[0].__name__) or compile_(*a))
    monkeypatch.setattr(front_end, "_CHECKED", {})
    x, out = torch.randn(100), torch.empty(100)
    for _ in range(3):
        scale_and_sum[(1,)](x, out, 100, BLOCK=128)
    scale_and_sum[(1,)](x, out, 100, BLOCK=256)
    assert calls == ["scale_and_sum", "scale_and_sum"]


def test_only_a_fault_of_the_judges_own_set_up_lets_the_kernel_run(monkeypatch):
    # The backend is built from the install target alone: no answer value reaches it, so its failure is ours.
    def broken():
        raise RuntimeError("no backend here")

    monkeypatch.setattr(front_end, "_backend", broken)
    monkeypatch.setattr(front_end, "_CHECKED", {})
    x, out = torch.randn(100), torch.empty(100)
    scale_and_sum[(1,)](x, out, 100, BLOCK=128)
    torch.testing.assert_close(out, x * 2.0 + x.sum())


def test_an_error_of_the_code_generator_is_a_refusal_not_a_skip(monkeypatch):
    # Red-team round s28: an error outside `CompilationError` (a `repr=` callback raising KeyError) was "skipped" and
    # the kernel ran as Python. A GPU compile of the same kernel fails the same way.
    from triton.compiler import ASTSource

    def broken(*args, **kwargs):
        raise KeyError("no name")

    monkeypatch.setattr(ASTSource, "make_ir", broken)
    monkeypatch.setattr(front_end, "_CHECKED", {})
    x, out = torch.randn(100), torch.empty(100)
    with pytest.raises(CompilationError, match="failed while compiling it .KeyError"):
        scale_and_sum[(1,)](x, out, 100, BLOCK=128)


def _no_name(fn):
    raise KeyError("no name")


@triton.jit(repr=_no_name)
def copy_with_raising_repr(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr))


@triton.jit(do_not_specialize=1)
def copy_with_bad_option(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr))


@triton.jit
def copy_first(x_ptr, out_ptr):
    tl.store(out_ptr, tl.load(x_ptr))


@triton.jit
def launches_another(x_ptr, out_ptr):
    copy_first[(1,)](x_ptr, out_ptr)


@pytest.mark.parametrize("launch, stage", [
    (lambda x, o: copy_with_raising_repr[(1,)](x, o), "compiling it .KeyError"),
    (lambda x, o: copy_with_bad_option[(1,)](x, o), "launching it .TypeError"),
    (lambda x, o: copy_first[(1,)](x, [o]), "launching it .TypeError: failed to specialize"),
], ids=["repr callback raises", "do_not_specialize=1", "list argument"])
def test_what_fails_on_the_answers_kernel_arguments_or_options_is_refused(launch, stage):
    x, out = torch.ones(1), torch.zeros(1)
    with pytest.raises(CompilationError, match=stage):
        launch(x, out)
    assert out.item() == 0.0  # the body never ran


def test_a_launch_from_a_kernel_body_raises_in_the_answers_process_too():
    from kernelgym.judge.replay import NestedLaunchError

    x, out = torch.ones(1), torch.zeros(1)
    with pytest.raises(CompilationError, match="copy_first used as a value"):
        launches_another[(1,)](x, out)  # checked: refused before the code generator reaches the launch
    with front_end.unchecked(), pytest.raises(Exception) as caught:
        launches_another[(1,)](x, out)  # unchecked, the body runs: the inner launch itself raises
    chain = [caught.value, caught.value.__cause__, caught.value.__context__]
    assert any(isinstance(e, NestedLaunchError) for e in chain) or "NestedLaunchError" in str(caught.value)
    assert out.item() == 0.0
    copy_first[(1,)](x, out)  # and a launch from host code afterwards runs
    assert out.item() == 1.0


# -- whole answers through the judge's CPU child -----------------------------------------------------
@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


def _relu_with(kernel_body_line: str, extra: str) -> str:
    answer = relu_answer(extra=extra)
    return answer.replace("    m = offs < n\n", f"    m = offs < n\n{kernel_body_line}", 1)


@pytest.mark.parametrize("engine", ["inprocess", "replay"])
def test_a_plain_global_is_a_compile_error_with_tritons_message(relu, engine):
    config = JudgeConfig(engine=engine, device="cpu", timeout_s=120)
    answer = _relu_with("    offs = offs + ZERO\n", "ZERO = 0\n")
    r = judge(relu, answer, config)
    assert r.status is Status.COMPILE_ERROR, r.message
    assert not r.compiled and "Cannot access global variable ZERO" in r.error


def test_a_constexpr_global_and_a_jit_helper_stay_ok(relu):
    config = JudgeConfig(engine="replay", device="cpu", timeout_s=120)
    extra = "ZERO = tl.constexpr(0)\n\n@triton.jit\ndef shift(o):\n    return o + ZERO\n"
    r = judge(relu, _relu_with("    offs = shift(offs)\n", extra), config)
    assert r.status is Status.OK, r.message


def test_a_noinline_helper_given_blocks_is_a_compile_error(relu):
    config = JudgeConfig(engine="replay", device="cpu", timeout_s=120)
    extra = "@triton.jit(noinline=True)\ndef shift(o):\n    return o + 0\n"
    r = judge(relu, _relu_with("    offs = shift(offs)\n", extra), config)
    assert r.status is Status.COMPILE_ERROR, r.message
    assert "marked noinline" in r.error


@pytest.mark.parametrize("engine", ["inprocess", "replay"])
def test_an_offset_pointer_as_a_condition_is_an_invalid_answer(relu, engine):
    config = JudgeConfig(engine=engine, device="cpu", timeout_s=120)
    r = judge(relu, _relu_with("    if x_ptr - 3:\n        m = m & (offs >= 0)\n", ""), config)
    assert r.status is Status.INVALID_ANSWER, r.message
    assert "tt.ptr_to_int" in r.error + r.message


# -- branches the check compiles and the interpreter does not run (red-team round s28) ------------------------------
RANGE = getattr(tl, "range")  # no path the scan could read: only the live globals tell what it is


@triton.jit
def identity_branch(x_ptr, out_ptr):
    if tl.range is tl.static_range:  # the code generator: two classes; the interpreter: one function
        tl.store(out_ptr, tl.load(x_ptr))


@triton.jit
def hidden_alias_branch(x_ptr, out_ptr):
    if RANGE == tl.static_range:
        tl.store(out_ptr, tl.load(x_ptr))


@triton.jit
def _helper_with_hasattr(p):
    if hasattr(p.handle, "data"):
        return tl.load(p)
    return tl.load(p) * 0.0


@triton.jit
def calls_helper_with_hasattr(x_ptr, out_ptr):
    tl.store(out_ptr, _helper_with_hasattr(x_ptr))


@triton.jit
def honest_flags(x_ptr, out_ptr, b_ptr, HAS_B: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
    if b_ptr is not None:
        x += tl.load(b_ptr + offs)
    if HAS_B and x_ptr.dtype.element_ty == tl.float32:
        x = x * 2.0
    if isinstance(BLOCK, tl.constexpr):  # False in both: the code generator unwraps it, the interpreter has an int
        x = x * 0.0
    tl.store(out_ptr + offs, x)


@pytest.mark.parametrize("kernel, needle", [
    (identity_branch, "tl.range used as a value"),
    (hidden_alias_branch, "RANGE used as a value"),
    (calls_helper_with_hasattr, "kernel _helper_with_hasattr: line"),
], ids=["tl.range is tl.static_range", "a global alias compared", "hasattr of .handle in a helper"])
def test_a_kernel_that_tests_triton_or_interpreter_objects_is_refused_before_it_runs(kernel, needle):
    x, out = torch.ones(1), torch.zeros(1)
    with pytest.raises(CompilationError, match=needle):
        kernel[(1,)](x, out)
    assert out.item() == 0.0


def test_none_tests_constexpr_flags_isinstance_and_dtypes_still_run():
    x, b, out = torch.ones(4), torch.ones(4), torch.zeros(4)
    honest_flags[(1,)](x, out, b, HAS_B=True, BLOCK=4)
    torch.testing.assert_close(out, torch.full((4,), 4.0))
    honest_flags[(1,)](x, out, None, HAS_B=False, BLOCK=4)
    torch.testing.assert_close(out, torch.ones(4))


def test_a_number_of_the_answers_own_class_is_no_launch_argument():
    # round s29: an int subclass with a stateful `__gt__` folded one way in the GPU front end and the other in the
    # interpreter's programs
    import torch
    import triton
    import triton.language as tl
    from triton.compiler import CompilationError

    class Flag(int):
        pass

    @triton.jit
    def store_flag(out_ptr, ON: tl.constexpr):
        tl.store(out_ptr, ON)

    out = torch.zeros(1, dtype=torch.int32)
    store_flag[(1,)](out, ON=1)  # a plain value: fine
    assert int(out[0]) == 1
    with pytest.raises(CompilationError, match="subclass of int"):
        store_flag[(1,)](out, ON=Flag(1))
