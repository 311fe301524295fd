"""Pointwise ops of the op library as Triton statements, and the elementwise kernel that runs a run of them.

Every op computes in fp32 on `v` and matches torch's definition exactly where torch has a
threshold or a constant (softplus's threshold 20, SELU's constants, hardswish's 3 and 6). tanh is
written through `tl.sigmoid` (`2 * sigmoid(2z) - 1`), which is exact at both ends, because Triton
has no `tl.tanh` on every version we run.
"""

from __future__ import annotations

from collections.abc import Callable

from kernelgym.coldstart.program import OpCall, PointwiseExpr, Program

SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
SQRT_HALF = 0.7071067811865476
SQRT_2_OVER_PI = 0.7978845608028654

TANH_HELPER = ("tanh_f32", """@triton.jit
def tanh_f32(z):
    # tanh(z) = 2 * sigmoid(2z) - 1: no overflow for large |z|
    return 2.0 * tl.sigmoid(2.0 * z) - 1.0""")
SOFTPLUS_HELPER = ("softplus_f32", """@triton.jit
def softplus_f32(z):
    # torch's softplus: linear above the threshold 20; exp(z) far below, where 1 + exp(z) rounds to 1
    e = tl.exp(tl.minimum(z, 20.0))
    return tl.where(z > 20.0, z, tl.where(z < -15.0, e, tl.log(1.0 + e)))""")


def _f(value: object) -> str:
    return repr(float(value))  # type: ignore[arg-type]


def _simple(*lines: str, helpers: tuple[tuple[str, str], ...] = ()) -> Callable[[OpCall], PointwiseExpr]:
    def make(call: OpCall) -> PointwiseExpr:
        args = {key: _f(value) for key, value in call.args.items()}
        return PointwiseExpr(tuple(line.format(**args, offs="{offs}", mask="{mask}", col="{col}", chan="{chan}")
                                   for line in lines), helpers=helpers)

    return make


def _binary(symbol: str) -> Callable[[OpCall], PointwiseExpr]:
    def make(call: OpCall) -> PointwiseExpr:
        name = call.inputs[0]
        return PointwiseExpr((f"v = v {symbol} tl.load({name}_ptr + {{offs}}, mask={{mask}}, other=0.0).to(tl.float32)",),
                             ptrs=((f"{name}_ptr", name),))

    return make


def _add_bias(call: OpCall) -> PointwiseExpr:
    index = "{chan}" if call.rank == 4 else "{col}"
    ptr = f"bias{call.k}_ptr"
    return PointwiseExpr((f"v = v + tl.load({ptr} + {index}, mask={{mask}}, other=0.0).to(tl.float32)",),
                         ptrs=((ptr, f"self.bias{call.k}"),), needs=frozenset({"chan" if call.rank == 4 else "col"}))


POINTWISE: dict[str, Callable[[OpCall], PointwiseExpr]] = {
    "relu": _simple("v = tl.maximum(v, 0.0)"),
    "leaky_relu": _simple("v = tl.where(v > 0.0, v, v * {slope})"),
    "gelu": _simple(f"v = 0.5 * v * (1.0 + tl.erf(v * {SQRT_HALF}))"),
    "gelu_tanh": _simple(f"v = 0.5 * v * (1.0 + tanh_f32({SQRT_2_OVER_PI} * (v + 0.044715 * v * v * v)))",
                         helpers=(TANH_HELPER,)),
    "silu": _simple("v = v * tl.sigmoid(v)"),
    "sigmoid": _simple("v = tl.sigmoid(v)"),
    "tanh": _simple("v = tanh_f32(v)", helpers=(TANH_HELPER,)),
    "softplus": _simple("v = softplus_f32(v)", helpers=(SOFTPLUS_HELPER,)),
    "elu": _simple("v = tl.where(v > 0.0, v, tl.exp(tl.minimum(v, 0.0)) - 1.0)"),
    "selu": _simple(f"v = {SELU_SCALE} * tl.where(v > 0.0, v, {SELU_ALPHA} * (tl.exp(tl.minimum(v, 0.0)) - 1.0))"),
    "hardtanh": _simple("v = tl.minimum(tl.maximum(v, -{bound}), {bound})"),
    "hardswish": _simple("v = v * tl.minimum(tl.maximum(v + 3.0, 0.0), 6.0) / 6.0"),
    "mish": _simple("v = v * tanh_f32(softplus_f32(v))", helpers=(TANH_HELPER, SOFTPLUS_HELPER)),
    "softsign": _simple("v = v / (1.0 + tl.abs(v))"),
    "scale_shift": _simple("v = v * {scale} + {shift}"),
    "clamp": _simple("v = tl.minimum(tl.maximum(v, {lo}), {hi})"),
    "abs": _simple("v = tl.abs(v)"),
    "square": _simple("v = v * v"),
    "add_input": _binary("+"),
    "mul_input": _binary("*"),
    "add_bias": _add_bias,
}


def pointwise_expr(call: OpCall) -> PointwiseExpr:
    return POINTWISE[call.op](call)


def fill(expr: PointwiseExpr, offs: str, mask: str, col: str = "col", chan: str = "chan") -> list[str]:
    """The statements of `expr` with its index placeholders filled."""
    return [line.format(offs=offs, mask=mask, col=col, chan=chan) for line in expr.lines]


def add_helpers(prog: Program, exprs: list[PointwiseExpr]) -> None:
    for expr in exprs:
        for name, source in expr.helpers:
            prog.add_kernel(name, source)


def ptr_params(exprs: list[PointwiseExpr]) -> list[tuple[str, str]]:
    """The extra pointer parameters of a run of ops, each once."""
    seen: dict[str, str] = {}
    for expr in exprs:
        for param, tensor in expr.ptrs:
            seen.setdefault(param, tensor)
    return list(seen.items())


def emit_elementwise(calls: list[OpCall], x: str, prog: Program) -> str:
    """One kernel for a run of pointwise ops over the contiguous tensor `x` (same shape out)."""
    exprs = [pointwise_expr(c) for c in calls]
    add_helpers(prog, exprs)
    ptrs = ptr_params(exprs)
    needs = frozenset().union(*(e.needs for e in exprs))
    name = "_".join(c.op for c in calls)[:48] + "_kernel"
    body = ["pid = tl.program_id(0)", "offs = pid * BLOCK + tl.arange(0, BLOCK)", "mask = offs < n_elements",
            "v = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)"]
    if "col" in needs:
        body.append("col = offs % N")
    if "chan" in needs:
        body.append("chan = (offs // HW) % C")
    if prog.style.helper_jit and len(exprs) > 1:
        # the run's math in one device function: the kernel only moves data
        helper = f"{name.removesuffix('_kernel')}_math"
        extra = [p for p, _ in ptrs] + sorted(needs)
        math_body = [line for e in exprs for line in fill(e, "offs", "mask")]
        prog.add_kernel(helper, "\n".join([
            "@triton.jit", f"def {helper}({', '.join(['v', 'offs', 'mask', *extra])}):",
            *(f"    {line}" for line in math_body), "    return v"]))
        body.append(f"v = {helper}({', '.join(['v', 'offs', 'mask', *extra])})")
    else:
        body += [line for e in exprs for line in fill(e, "offs", "mask")]
    body.append("tl.store(out_ptr + offs, v, mask=mask)")
    # only the sizes the run's index math needs: the last dim for per-feature operands, the
    # channel count and plane size for per-channel ones (rank 4)
    sizes = (["N"] if "col" in needs else []) + (["C", "HW"] if "chan" in needs else [])
    params = ["x_ptr", "out_ptr", *(p for p, _ in ptrs), "n_elements", *sizes, "BLOCK: tl.constexpr"]
    style = prog.style
    if style.autotune:
        deco = ["@triton.autotune(", "    configs=[" + ", ".join(
            f"triton.Config({{'BLOCK': {b}}}, num_warps={w})" for b, w in ((256, 2), (1024, 4), (2048, 8))) + "],",
                "    key=['n_elements'],", ")", "@triton.jit"]
    else:
        deco = ["@triton.jit"]
    comment = [f"    # {' -> '.join(c.op for c in calls)}, one element per lane, computed in fp32"] \
        if style.comments else []
    kernel = prog.add_kernel(name, "\n".join([*deco, f"def {name}({', '.join(params)}):", *comment,
                                              *(f"    {line}" for line in body)]))
    operands = [t.removeprefix("self.") for _, t in ptrs]  # y1, bias2: the launcher's parameter names
    size_lines = {"N": "    N = x.shape[-1]", "C": "    C = x.shape[1]", "HW": "    HW = x.shape[2] * x.shape[3]"}
    meta = "" if style.autotune else f", BLOCK={style.block}, num_warps={style.warps}"
    grid = "lambda meta: (triton.cdiv(n, meta['BLOCK']),)" if style.autotune else f"(triton.cdiv(n, {style.block}),)"
    fn = prog.add_function(f"run_{name.removesuffix('_kernel')}", "\n".join([
        f"def run_{name.removesuffix('_kernel')}({', '.join(['x', *operands])}):",
        "    x = x.contiguous()",
        "    out = torch.empty_like(x)",
        "    n = x.numel()",
        *(size_lines[k] for k in sizes),
        f"    grid = {grid}",
        f"    {kernel}[grid]({', '.join(['x', 'out', *operands, 'n', *sizes])}{meta})",
        "    return out"]))
    return prog.call(fn, [x, *(t for _, t in ptrs)])


def emit_copy(x: str, prog: Program) -> str:
    """A contiguous copy of `x` by a kernel: for chains whose ops are all views."""
    kernel = prog.add_kernel("copy_kernel", "\n".join([
        "@triton.jit", "def copy_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):",
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)",
        "    mask = offs < n_elements",
        "    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)"]))
    fn = prog.add_function("copy_contiguous", "\n".join([
        "def copy_contiguous(x):",
        "    src = x.contiguous()",
        "    out = torch.empty(src.shape, device=src.device, dtype=src.dtype)",
        "    n = src.numel()",
        f"    {kernel}[(triton.cdiv(n, {prog.style.block}),)](src, out, n, BLOCK={prog.style.block})",
        "    return out"]))
    return prog.call(fn, [x])
