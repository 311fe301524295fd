"""Under Triton's interpreter, what an honest GPU answer does runs and computes what it would on a GPU.

Real kernels, run in this process under `TRITON_INTERPRET=1` after `make_interpreter_faithful()`
(the judge's CPU child calls it before importing an answer).
"""

import numpy as np
import pytest
import torch
import triton
import triton.language as tl
from triton.language.extra import libdevice
from triton.language.extra.cuda import libdevice as cuda_libdevice

from kernelgym.judge.interpreter import H100_PROPERTIES, interpreting, make_interpreter_faithful

pytestmark = pytest.mark.skipif(not interpreting(), reason="runs Triton's CPU interpreter")
make_interpreter_faithful()

TUNED: list[int] = []  # the BLOCK of every launch of `tuned_add`, tuning runs included


def _record(nargs: dict) -> None:
    TUNED.append(nargs["BLOCK"])


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=_record), triton.Config({"BLOCK": 128}, pre_hook=_record)],
                 key=["n"])
@triton.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


def _grid(n: int):  # noqa: ANN202
    return lambda meta: (triton.cdiv(n, meta["BLOCK"]),)


def test_multi_config_autotune_runs_every_config_once_then_the_first_config():
    TUNED.clear()
    x, y = torch.randn(1000), torch.randn(1000)
    out = torch.empty_like(x)
    tuned_add[_grid(1000)](x, y, out, 1000)
    assert torch.equal(out, x + y)
    assert TUNED == [64, 128, 64]  # tuning ran each config on the real arguments, then the chosen one
    assert tuned_add.best_config.kwargs == {"BLOCK": 64}
    tuned_add[_grid(1000)](x, y, out, 1000)
    assert TUNED == [64, 128, 64, 64]  # a known key is not tuned again
    tuned_add[_grid(300)](x[:300], y[:300], out[:300], 300)
    assert TUNED[4:] == [64, 128, 64]  # a new key is


def _accumulating_sum(reset: bool):  # noqa: ANN202
    """out[0] += sum(x) with atomics: correct only if `out` is zeroed before each tuning run."""

    @triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"],
                     reset_to_zero=["out_ptr"] if reset else None)
    @triton.jit
    def atomic_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))

    return atomic_sum


@pytest.mark.parametrize("reset", [True, False])
def test_autotune_tuning_runs_touch_the_real_arguments_as_on_a_gpu(reset):
    kernel = _accumulating_sum(reset)
    x = torch.ones(100)
    out = torch.zeros(1)
    kernel[_grid(100)](x, out, 100)
    # Without reset_to_zero a GPU's tuning runs accumulate into `out` too: such an answer fails there.
    assert out.item() == (100.0 if reset else 300.0)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
                 do_bench=lambda kernel_call, quantiles: triton.testing.do_bench(kernel_call, quantiles=quantiles))
@triton.jit
def tuned_with_own_bench(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


def test_autotune_with_an_answers_own_benchmarker_runs():
    x = torch.randn(50)
    out = torch.empty_like(x)
    tuned_with_own_bench[_grid(50)](x, out, 50)
    assert torch.equal(out, x * 2.0)


@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n"])})
@triton.jit
def whole_row_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0, mask=m)


def test_heuristics_choose_the_block():
    x = torch.randn(37)
    out = torch.empty_like(x)
    whole_row_scale[(1,)](x, out, 37)
    assert torch.equal(out, x * 3.0)


@triton.jit
def unary_generic(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.5)
    if OP == "erf":
        y = libdevice.erf(x)
    elif OP == "tanh":
        y = libdevice.tanh(x)
    elif OP == "exp":
        y = libdevice.exp(x)
    elif OP == "rsqrt":
        y = libdevice.rsqrt(x)
    elif OP == "log1p":
        y = libdevice.log1p(x)
    elif OP == "expm1":
        y = libdevice.expm1(x)
    elif OP == "erfinv":
        y = libdevice.erfinv(x)
    elif OP == "lgamma":
        y = libdevice.lgamma(x)
    elif OP == "round":
        y = libdevice.round(x)
    elif OP == "isnan":
        y = libdevice.isnan(x).to(tl.float32)
    else:
        y = libdevice.float2int_rn(x).to(tl.float32)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def unary_cuda(x_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.5)
    if OP == "erf":
        y = cuda_libdevice.erf(x)
    elif OP == "tanh":
        y = cuda_libdevice.tanh(x)
    else:
        y = tl.extra.cuda.libdevice.sqrt(x)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def binary_generic(x_ptr, y_ptr, out_ptr, n, OP: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.5)
    y = tl.load(y_ptr + offs, mask=m, other=0.5)
    if OP == "pow":
        z = libdevice.pow(x, y)
    elif OP == "pow_int":
        z = libdevice.pow(x, 3)
    elif OP == "atan2":
        z = libdevice.atan2(x, y)
    elif OP == "fmod":
        z = libdevice.fmod(x, y)
    else:
        z = libdevice.fma(x, y, x)
    tl.store(out_ptr + offs, z, mask=m)


UNARY = {
    "erf": (torch.erf, (-3, 3)), "tanh": (torch.tanh, (-4, 4)), "exp": (torch.exp, (-5, 5)),
    "rsqrt": (torch.rsqrt, (0.01, 10)), "log1p": (torch.log1p, (-0.9, 5)), "expm1": (torch.expm1, (-3, 3)),
    "erfinv": (torch.erfinv, (-0.99, 0.99)), "lgamma": (torch.lgamma, (0.1, 10)),
    "round": (lambda t: torch.sign(t) * torch.floor(t.abs() + 0.5), (-5, 5)), "isnan": (lambda t: t.isnan().float(), (-1, 1)),
    "float2int_rn": (torch.round, (-5, 5)),
}  # fmt: skip


def _uniform(low: float, high: float, n: int = 200, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return low + (high - low) * torch.rand(n, generator=g)


@pytest.mark.parametrize("op", sorted(UNARY))
def test_libdevice_unary_functions_match_torch(op):
    ref, (low, high) = UNARY[op]
    x = _uniform(low, high)
    out = torch.empty_like(x)
    unary_generic[(1,)](x, out, x.numel(), OP=op, BLOCK=256)
    torch.testing.assert_close(out, ref(x), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("op,ref", [("erf", torch.erf), ("tanh", torch.tanh), ("sqrt", torch.sqrt)])
def test_cuda_libdevice_matches_torch(op, ref):
    x = _uniform(0.0, 3.0)
    out = torch.empty_like(x)
    unary_cuda[(1,)](x, out, x.numel(), OP=op, BLOCK=256)
    torch.testing.assert_close(out, ref(x), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("op,ref", [
    ("pow", torch.pow), ("pow_int", lambda x, y: x ** 3), ("atan2", torch.atan2), ("fmod", torch.fmod),
    ("fma", lambda x, y: x * y + x),
])  # fmt: skip
def test_libdevice_binary_functions_match_torch(op, ref):
    x, y = _uniform(0.1, 3.0, seed=1), _uniform(0.5, 2.0, seed=2)
    out = torch.empty_like(x)
    binary_generic[(1,)](x, y, out, x.numel(), OP=op, BLOCK=256)
    torch.testing.assert_close(out, ref(x, y), rtol=2e-6, atol=2e-6)


def test_libdevice_rejects_the_argument_types_a_gpu_rejects():
    x = torch.randn(16, dtype=torch.float16)  # libdevice's erf takes fp32 and fp64 only: no fp16 symbol
    out = torch.empty_like(x)
    with pytest.raises(Exception):  # noqa: B017 - the interpreter wraps the compile-time error
        unary_generic[(1,)](x, out, x.numel(), OP="erf", BLOCK=16)


@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_stride, out_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    # The Triton tutorial's persistent fused softmax (02-fused-softmax.py).
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        col_offsets = tl.arange(0, BLOCK_SIZE)
        mask = col_offsets < n_cols
        row = tl.load(in_ptr + row_idx * in_stride + col_offsets, mask=mask, other=-float("inf"))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        out = numerator / tl.sum(numerator, axis=0)
        tl.store(out_ptr + row_idx * out_stride + col_offsets, out, mask=mask)


def test_the_tutorial_softmax_sizes_its_grid_from_the_driver_and_runs():
    device = triton.runtime.driver.active.get_active_torch_device()
    assert device == torch.device("cpu")  # the judge's device: an answer allocates where its inputs are
    props = triton.runtime.driver.active.utils.get_device_properties(device.index)
    assert props == H100_PROPERTIES
    assert triton.runtime.driver.active.get_current_target().backend == "cuda"
    x = torch.randn(70, 50, device=device)
    y = torch.empty_like(x)
    block = triton.next_power_of_2(x.shape[1])
    kernel = softmax_kernel.warmup(y, x, x.stride(0), y.stride(0), x.shape[0], x.shape[1], BLOCK_SIZE=block,
                                   num_stages=2, num_warps=8, grid=(1,))
    kernel._init_handles()
    occupancy = props["max_num_regs"] // (kernel.n_regs * props["warpSize"] * 8)
    occupancy = min(occupancy, props["max_shared_mem"] // kernel.metadata.shared)
    programs = min(props["multiprocessor_count"] * occupancy, x.shape[0])
    kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), x.shape[0], x.shape[1], block, 2)
    torch.testing.assert_close(y, torch.softmax(x, dim=1))


@triton.jit
def tl_math_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.math.erf(x) + tl.math.exp2(x) + tl.math.rsqrt(x) + tl.math.log2(x) + tl.math.div_rn(x, x + 1.0)
    tl.store(out_ptr + offs, y, mask=m)


def test_tl_math_runs_under_the_interpreter():
    x = _uniform(0.1, 3.0)
    out = torch.empty_like(x)
    tl_math_kernel[(1,)](x, out, x.numel(), BLOCK=256)
    ref = torch.erf(x) + torch.exp2(x) + torch.rsqrt(x) + torch.log2(x) + x / (x + 1.0)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)


def test_a_libdevice_function_without_a_cpu_counterpart_says_so():
    from kernelgym.judge.interpreter import libdevice_numpy

    with pytest.raises(NotImplementedError, match="libdevice.j0"):
        libdevice_numpy("j0", [torch.ones(2).numpy()], torch.ones(2).numpy().dtype)


@triton.jit
def strided_sum(x_ptr, out_ptr, K, BLOCK_K: tl.constexpr):
    # a scalar argument used as a Python integer: the K-loop of every matmul answer
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        offs = k0 + tl.arange(0, BLOCK_K)
        acc += tl.load(x_ptr + offs, mask=offs < K, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


def test_scalar_arguments_index_ranges_whatever_the_interpreters_int_conversion():
    from triton.runtime import interpreter

    x = torch.arange(37, dtype=torch.float32)
    out = torch.empty(1)
    strided_sum[(1,)](x, out, 37, BLOCK_K=8)
    assert out.item() == x.sum().item()
    assert getattr(interpreter._patch_lang_tensor, "_kernelgym_index", False)

    class Scalar:  # what the interpreter hands a kernel for an int argument: a one-element array
        def __init__(self, value):
            self.handle = type("Handle", (), {"data": np.array([value])})()

    scope = interpreter._LangPatchScope()
    interpreter._patch_lang_tensor(Scalar, scope)
    try:
        assert list(range(0, Scalar(5), 2)) == [0, 2, 4]  # Triton 3.6's int(array([5])) fails on NumPy 2
        block = Scalar(0)
        block.handle.data = np.arange(4)
        with pytest.raises(TypeError, match="block of 4"):  # a block stays no integer, as on a GPU
            range(block)
    finally:
        scope.restore()


_MODULE_WITH_KERNEL = '''
import triton
import triton.language as tl

SCALE = tl.constexpr(2.0)


@triton.jit
def _scaled(x):
    return x * SCALE


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _scaled(tl.load(x_ptr + offs, mask=mask)), mask=mask)
'''


def test_a_launch_adds_no_interpreter_names_to_the_kernels_module(tmp_path):
    # Red-team round s21: Triton's rewriter copied its own module's names (inspect, np, ...) into the
    # kernel's module, where the answer's Python could read them after its first launch.
    import importlib.util

    path = tmp_path / "answer_with_kernel.py"
    path.write_text(_MODULE_WITH_KERNEL)
    spec = importlib.util.spec_from_file_location("answer_with_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    before = set(vars(module))
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty_like(x)
    module.scale_kernel[(1,)](x, out, 10, BLOCK=16)
    assert torch.equal(out, 2 * x)  # the kernel still reads its module's constexpr and helper kernel
    assert set(vars(module)) == before, set(vars(module)) - before


def test_a_jit_function_called_from_host_code_raises_as_on_a_gpu():
    # Red-team round s23: a direct call ran the body as Python with the interpreter's names in scope and handed
    # back what it returned (the builtins module). On a GPU the call raises; device-function calls inside a
    # launch still run (`scale_kernel` calls `_scaled`).
    @triton.jit
    def grab(x):
        return x

    with pytest.raises(RuntimeError, match="outside of the scope of a kernel"):
        grab(1)
    x = torch.arange(10, dtype=torch.float32)
    out = torch.empty_like(x)
    _helper_kernel[(1,)](x, out, 10, BLOCK=16)
    assert torch.equal(out, x + 1)


@triton.jit
def _plus_one(v):
    return v + 1


@triton.jit
def _helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _plus_one(tl.load(x_ptr + offs, mask=mask)), mask=mask)


def test_rewritten_kernels_see_no_interpreter_modules():
    # Red-team round s23: a kernel's private scope held the interpreter module's imports (`inspect`, `np`).
    from triton.runtime import interpreter

    @triton.jit
    def reads_inspect(out_ptr):
        tl.store(out_ptr, inspect is None)  # noqa: F821 - the name must not resolve

    assert isinstance(vars(interpreter).get("inspect"), type(interpreter))
    with pytest.raises(Exception, match="inspect"):
        reads_inspect[(1,)](torch.zeros(1))


def test_a_jit_function_called_from_a_grid_callable_raises():
    # Red-team round s25: a grid callable runs inside the launch but before any program; a launch counter let it call
    # a jit function as host Python.
    @triton.jit
    def grab(x):
        return x

    with pytest.raises(Exception, match="outside of the scope of a kernel"):
        _helper_kernel[lambda meta: (grab(1),)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4)


def test_a_rewritten_kernel_runs_without_the_interpreters_modules():
    # Red-team round s25: Triton's own `_compile_and_exec` copied every interpreter global (inspect, np, ...) into the
    # scope the kernel was built in.
    from triton.runtime import interpreter

    x = torch.arange(4, dtype=torch.float32)
    out = torch.empty_like(x)
    _helper_kernel[(1,)](x, out, 4, BLOCK=4)  # rewritten at its first launch
    scope = interpreter.InterpretedFunction.rewritten_fn[_helper_kernel.fn].__globals__
    own = _helper_kernel.fn.__globals__  # this test module's own imports (torch, tl, np...) are the kernel's
    assert "inspect" in vars(interpreter) and "inspect" not in own
    assert not [k for k, v in scope.items() if isinstance(v, type(interpreter)) and k not in own]
    assert "interpreter_semantic" in scope  # what the rewrite wrote into the kernel stays


@triton.jit
def _docstring_def_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Copies x.
def _docstring_def_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass
    """
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_the_interpreter_runs_the_kernels_own_body_not_a_def_in_its_docstring():
    # Red-team round s25: the interpreter took the source from the last line starting with `def `.
    x = torch.arange(8, dtype=torch.float32)
    out = torch.zeros_like(x)
    _docstring_def_kernel[(1,)](x, out, 8, BLOCK=8)
    assert torch.equal(out, x)


def _closure_kernel_factory():
    SCALE = tl.constexpr(3)

    @triton.jit
    def scale3(x_ptr, out_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * SCALE)

    return scale3


def test_a_kernel_reads_its_closure_not_the_interpreters_names():
    # Red-team round s26: the rewrite ran the kernel's source at top level, dropping its closure, and a name bound
    # there came from the interpreter's module instead.
    x = torch.arange(4, dtype=torch.float32)
    out = torch.empty_like(x)
    _closure_kernel_factory()[(1,)](x, out, BLOCK=4)
    assert torch.equal(out, 3 * x)


@triton.jit
def _returns_its_argument(a):
    return a


def test_a_replaced_ast_transformer_changes_nothing_of_what_runs():
    # Red-team round s27: the rewriter compiled whatever tree its (replaceable) transformer returned.
    import ast

    class Edit(ast.NodeTransformer):
        def visit_Return(self, node):  # noqa: N802 - ast's naming
            return ast.Return(value=ast.Constant(value="edited"))

    rewriter = _returns_its_argument.rewriter
    saved = rewriter.ast_transformer
    rewriter.ast_transformer = Edit()
    try:
        assert rewriter.rewrite_ast()(7) == 7
    finally:
        rewriter.ast_transformer = saved


def _empty_cell_kernel():
    @triton.jit
    def reads_late_local(out_ptr):
        f = open  # a local of the enclosing function, bound only after the launch: its cell is empty then
        tl.store(out_ptr, 1.0)

    out = torch.zeros(1)
    try:
        reads_late_local[(1,)](out)
    finally:
        open = None  # noqa: F841 - makes `open` a local of this function, read by the kernel as a free variable
    return out


def test_an_empty_closure_cell_raises_name_error_not_the_builtin(monkeypatch):
    # Red-team round s28: the empty cell was dropped and the name fell through to the module's builtins. The GPU
    # front-end check refuses the kernel first (its empty cell is an error there too); the interpreter's own
    # scope must hold without it.
    from kernelgym.judge import front_end

    with pytest.raises(Exception) as info:
        _empty_cell_kernel()
    assert "Cell" in repr(info.value)  # the front end: "ValueError: Cell is empty"
    monkeypatch.setitem(front_end._STATE, "off", True)
    with pytest.raises(Exception) as info:
        _empty_cell_kernel()
    assert "NameError" in repr(info.value) and "open" in repr(info.value)


def _filled_cell_kernel():
    open = tl.constexpr(2.0)  # noqa: A001 - a closure value shadowing a builtin is read as the closure's

    @triton.jit
    def reads_local(out_ptr):
        tl.store(out_ptr, open)

    out = torch.zeros(1)
    reads_local[(1,)](out)
    return out


def test_a_filled_closure_cell_shadowing_a_builtin_is_read():
    assert _filled_cell_kernel().item() == 2.0


@triton.jit
def _pointer_as_integer(x_ptr, out_ptr, HOW: tl.constexpr):
    # `tl.range is tl.static_range` holds only under the interpreter: the GPU front end checks the `else` alone
    # (red-team round s28), so the interpreter's own refusal is what this reaches
    if tl.range is tl.static_range:
        if HOW == 0:
            v = int(x_ptr)
        elif HOW == 1:
            v = x_ptr.__index__()
        elif HOW == 2:
            v = float(x_ptr)
        else:
            v = hash(x_ptr)
        tl.store(out_ptr, v)
    else:
        tl.store(out_ptr, 0)


@pytest.mark.parametrize("how", [0, 1, 2, 3])
def test_a_pointer_is_no_integer_inside_a_kernel(how, front_end_off):
    # Red-team round s28: `int(ptr)` was the pointer's address under the interpreter (the GPU refuses it).
    out = torch.full((1,), 7, dtype=torch.int64)
    with pytest.raises(Exception) as info:
        _pointer_as_integer[(1,)](torch.zeros(4), out, HOW=how)
    assert "TypeError" in repr(info.value) or "TypeError" in repr(info.value.__cause__)
    assert out.item() == 7


@triton.jit
def _pointer_text(x_ptr, n, out_ptr):
    if tl.range is tl.static_range:  # interpreter only, as above
        tl.static_assert(str(x_ptr) == "pointer<fp32>[]")
        tl.static_assert(repr(x_ptr) == "pointer<fp32>[]")
        tl.static_assert(int(n) == 3)  # an integer scalar still is one
    tl.store(out_ptr, 1)


def test_a_pointers_text_holds_no_address(front_end_off):
    out = torch.zeros(1, dtype=torch.int32)
    _pointer_text[(1,)](torch.zeros(4), 3, out)
    assert out.item() == 1


@pytest.fixture
def front_end_off(monkeypatch):
    """The interpreter's own defences, with the GPU front-end check (which refuses these kernels first since round
    s28's branch rule) out of the way."""
    from kernelgym.judge import front_end

    monkeypatch.setitem(front_end._STATE, "off", True)
