"""The op library of the task generator, as data: what each op writes, how it changes the shape, what it costs.

A chain is built on a symbolic tensor `x` whose dims are `Dim`s: a Python expression over the
task's module-level size constants (`batch_size`, `height // 2`) with its value at the full and
at the small size. Layouts by rank: 2 = (batch, features), 3 = (batch, channels, length),
4 = (batch, channels, height, width). An op's `apply(ctx)` returns the `Step` it adds to the
task (forward lines, `__init__` lines, new constants, extra inputs, output shape, FLOPs and
bytes at the full size), or None where it does not fit the current shape.

Most ops are rows of `_POINTWISE` (template, FLOPs per element, literal choices); the ones that
change shapes or own parameters are small rule functions below it. Costs are eager estimates:
FLOPs of the arithmetic, bytes read and written by the op on its own (no fusion).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

CATEGORIES = ("elementwise", "activation", "reduction", "norm", "matmul", "conv", "pooling", "softmax", "loss",
              "reshape")
DTYPE_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2}
# Size pools: full sizes are even so that halving ops apply at the full size; small sizes are odd
# where possible so that Triton answers must mask their tails on the CPU interpreter.
FULL_SIZES: dict[str, tuple[int, ...]] = {
    "batch2": (128, 256, 512, 1024, 2048, 4096, 8192),
    "features": (256, 384, 512, 768, 1024, 2048, 4096, 8192),
    "batch3": (4, 8, 16, 32, 64),
    "channels3": (16, 32, 64, 128, 256, 512),
    "length": (64, 128, 256, 512, 1024, 2048),
    "batch4": (2, 4, 8, 16, 32, 64),
    "channels4": (3, 8, 16, 32, 64, 128, 256),
    "spatial": (16, 32, 64, 128, 256),
}
SMALL_SIZES: dict[str, tuple[int, int]] = {
    "batch2": (3, 12), "features": (17, 160), "batch3": (2, 4), "channels3": (3, 12), "length": (7, 40),
    "batch4": (2, 3), "channels4": (3, 10), "spatial": (6, 14),
}


@dataclass(frozen=True)
class Dim:
    """One tensor dim: an expression over size constants, and its value at each size."""

    expr: str
    full: int
    small: int


Shape = tuple[Dim, ...]


@dataclass(frozen=True)
class InputSpec:
    """An extra forward input: `randn`, `rand` (in [0, 1)), `simplex` (softmax rows) or `classes`
    (integer targets in [0, shape's last dim of x) — `high` names that bound)."""

    name: str
    shape: Shape
    kind: str = "randn"
    high: str = ""


@dataclass
class Step:
    """What one op adds to a task."""

    op: str
    forward: list[str]
    out: Shape
    flops: float
    bytes: float
    init: list[str] = field(default_factory=list)
    constants: dict[str, tuple[int, int]] = field(default_factory=dict)
    inputs: list[InputSpec] = field(default_factory=list)
    params: float = 0.0  # parameter elements
    # What a writer of the op needs beyond the lines: the literals drawn, a layer's structural
    # arguments (kernel size, groups, bias). The cold-start emitter reads these, not the source text.
    args: dict[str, object] = field(default_factory=dict)


@dataclass
class Ctx:
    """The state an op is applied to: the current shape, its position `k` in the chain, the rng."""

    shape: Shape
    k: int
    rng: random.Random
    dtype: str

    @property
    def itemsize(self) -> int:
        return DTYPE_SIZES[self.dtype]

    def new_dim(self, pool: str, name: str) -> Dim:
        """A fresh size constant `name_k` drawn from `pool`."""
        lo, hi = SMALL_SIZES[pool]
        return Dim(f"{name}_{self.k}", self.rng.choice(FULL_SIZES[pool]), self.rng.randint(lo, hi))


@dataclass(frozen=True)
class Op:
    """One library entry. `terminal` ops may only end a chain; `weight` biases the sampler."""

    name: str
    category: str
    ranks: tuple[int, ...]
    apply: Callable[[Ctx], Step | None]
    terminal: bool = False
    weight: float = 1.0


def numel(shape: Shape, size: str = "full") -> int:
    return math.prod(getattr(d, size) for d in shape)


def shape_args(shape: Shape) -> str:
    return ", ".join(d.expr for d in shape)


def _half(d: Dim) -> Dim:
    return Dim(f"{d.expr} // 2" if d.expr.isidentifier() else f"({d.expr}) // 2", d.full // 2, d.small // 2)


def _double(d: Dim) -> Dim:
    return Dim(f"{d.expr} * 2" if d.expr.isidentifier() else f"({d.expr}) * 2", d.full * 2, d.small * 2)


def _product(dims: Shape) -> Dim:
    parts = [d.expr if d.expr.isidentifier() else f"({d.expr})" for d in dims]
    return Dim(" * ".join(parts), numel(dims), numel(dims, "small"))


# --- pointwise ops: (name, category, expression of x, FLOPs per element, literal choices) ---------
_POINTWISE: tuple[tuple[str, str, str, float, dict[str, tuple]], ...] = (
    ("relu", "activation", "torch.relu(x)", 1, {}),
    ("leaky_relu", "activation", "F.leaky_relu(x, {slope})", 2, {"slope": (0.01, 0.1, 0.2)}),
    ("gelu", "activation", "F.gelu(x)", 8, {}),
    ("gelu_tanh", "activation", "F.gelu(x, approximate=\"tanh\")", 10, {}),
    ("silu", "activation", "F.silu(x)", 5, {}),
    ("sigmoid", "activation", "torch.sigmoid(x)", 4, {}),
    ("tanh", "activation", "torch.tanh(x)", 5, {}),
    ("softplus", "activation", "F.softplus(x)", 6, {}),
    ("elu", "activation", "F.elu(x)", 4, {}),
    ("selu", "activation", "F.selu(x)", 5, {}),
    ("hardtanh", "activation", "F.hardtanh(x, -{bound}, {bound})", 2, {"bound": (0.5, 1.0, 2.0)}),
    ("hardswish", "activation", "F.hardswish(x)", 4, {}),
    ("mish", "activation", "F.mish(x)", 10, {}),
    ("softsign", "activation", "F.softsign(x)", 3, {}),
    ("scale_shift", "elementwise", "x * {scale} + {shift}", 2, {"scale": (0.5, 1.5, 2.0, -1.0),
                                                                  "shift": (0.1, -0.5, 1.0)}),
    ("clamp", "elementwise", "torch.clamp(x, {lo}, {hi})", 2, {"lo": (-1.0, -0.5, 0.0), "hi": (1.0, 2.0, 6.0)}),
    ("abs", "elementwise", "torch.abs(x)", 1, {}),
    ("square", "elementwise", "x * x", 1, {}),
    ("center", "elementwise", "x - x.mean(dim=-1, keepdim=True)", 3, {}),
    ("cumsum", "reduction", "torch.cumsum(x, dim=-1)", 1, {}),
    ("softmax", "softmax", "torch.softmax(x, dim=-1)", 5, {}),
    ("log_softmax", "softmax", "torch.log_softmax(x, dim=-1)", 5, {}),
    ("l2_normalize", "norm", "F.normalize(x, dim=-1)", 4, {}),
)


def _pointwise_op(name: str, category: str, template: str, flops: float, choices: dict[str, tuple]) -> Op:
    def apply(ctx: Ctx) -> Step:
        literals = {key: ctx.rng.choice(values) for key, values in choices.items()}
        n = numel(ctx.shape)
        return Step(name, [f"x = {template.format(**literals)}"], ctx.shape, flops * n, 2 * n * ctx.itemsize,
                    args=literals)

    return Op(name, category, (2, 3, 4), apply)


# --- ops with an extra input or parameters ---------------------------------------------------------
def _binary(name: str, symbol: str) -> Op:
    def apply(ctx: Ctx) -> Step:
        y = InputSpec(f"y{ctx.k}", ctx.shape)
        n = numel(ctx.shape)
        return Step(name, [f"x = x {symbol} {y.name}"], ctx.shape, n, 3 * n * ctx.itemsize, inputs=[y])

    return Op(name, "elementwise", (2, 3, 4), apply)


def _add_bias(ctx: Ctx) -> Step:
    axis = 1 if len(ctx.shape) == 4 else -1  # per channel on NCHW, per feature otherwise
    d = ctx.shape[axis]
    shape = f"{d.expr}, 1, 1" if axis == 1 else f"{d.expr}"
    n = numel(ctx.shape)
    return Step("add_bias", [f"x = x + self.bias{ctx.k}"], ctx.shape, n, 2 * n * ctx.itemsize,
                init=[f"self.bias{ctx.k} = nn.Parameter(torch.randn({shape}))"], params=d.full)


def _linear(ctx: Ctx) -> Step:
    d_in = ctx.shape[-1]
    d_out = ctx.new_dim("features" if len(ctx.shape) == 2 else "channels3", "hidden")
    rows = numel(ctx.shape) // d_in.full
    bias = ctx.rng.random() < 0.7
    out = ctx.shape[:-1] + (d_out,)
    return Step("linear", [f"x = self.linear{ctx.k}(x)"], out, 2.0 * rows * d_in.full * d_out.full,
                (rows * d_in.full + d_in.full * d_out.full + rows * d_out.full) * ctx.itemsize,
                init=[f"self.linear{ctx.k} = nn.Linear({d_in.expr}, {d_out.expr}, bias={bias})"],
                constants={d_out.expr: (d_out.full, d_out.small)}, params=d_in.full * d_out.full, args={"bias": bias})


def _matmul_input(ctx: Ctx) -> Step:
    """x @ y with y an input: (B, F) @ (F, N), or batched (B, C, L) @ (B, L, N)."""
    d_in = ctx.shape[-1]
    d_out = ctx.new_dim("features" if len(ctx.shape) == 2 else "channels3", "cols")
    y = InputSpec(f"y{ctx.k}", ctx.shape[:-2] + (d_in, d_out))
    rows = numel(ctx.shape) // d_in.full
    out = ctx.shape[:-1] + (d_out,)
    op = "bmm" if len(ctx.shape) == 3 else "matmul"
    call = "torch.bmm" if op == "bmm" else "torch.matmul"
    return Step(op, [f"x = {call}(x, {y.name})"], out, 2.0 * rows * d_in.full * d_out.full,
                (numel(ctx.shape) + numel(y.shape) + numel(out)) * ctx.itemsize,
                constants={d_out.expr: (d_out.full, d_out.small)}, inputs=[y])


def _gram(ctx: Ctx) -> Step:
    """Scaled x @ x^T over the last dim: the score matrix of self-attention."""
    b, c, length = ctx.shape
    out = (b, c, c)
    return Step("gram", [f"x = torch.bmm(x, x.transpose(1, 2)) / {length.expr} ** 0.5"], out,
                2.0 * b.full * c.full * c.full * length.full, (numel(ctx.shape) + numel(out)) * ctx.itemsize)


def _conv2d(ctx: Ctx) -> Step:
    b, c, h, w = ctx.shape
    k = ctx.rng.choice((1, 3, 3, 5))
    c_out = ctx.new_dim("channels4", "out_channels")
    out = (b, c_out, h, w)
    macs = numel(out) * c.full * k * k
    return Step("conv2d", [f"x = self.conv{ctx.k}(x)"], out, 2.0 * macs,
                (numel(ctx.shape) + numel(out) + c.full * c_out.full * k * k) * ctx.itemsize,
                init=[f"self.conv{ctx.k} = nn.Conv2d({c.expr}, {c_out.expr}, {k}, padding={k // 2})"],
                constants={c_out.expr: (c_out.full, c_out.small)}, params=c.full * c_out.full * k * k,
                args={"kernel_size": k})


def _depthwise_conv2d(ctx: Ctx) -> Step:
    c = ctx.shape[1]
    k = ctx.rng.choice((3, 5, 7))
    n = numel(ctx.shape)
    return Step("depthwise_conv2d", [f"x = self.dwconv{ctx.k}(x)"], ctx.shape, 2.0 * n * k * k,
                (2 * n + c.full * k * k) * ctx.itemsize,
                init=[f"self.dwconv{ctx.k} = nn.Conv2d({c.expr}, {c.expr}, {k}, padding={k // 2}, groups={c.expr})"],
                params=c.full * k * k, args={"kernel_size": k})


def _conv_transpose2d(ctx: Ctx) -> Step:
    b, c, h, w = ctx.shape
    c_out = ctx.new_dim("channels4", "out_channels")
    out = (b, c_out, _double(h), _double(w))
    return Step("conv_transpose2d", [f"x = self.deconv{ctx.k}(x)"], out, 2.0 * numel(ctx.shape) * c_out.full * 4,
                (numel(ctx.shape) + numel(out) + c.full * c_out.full * 4) * ctx.itemsize,
                init=[f"self.deconv{ctx.k} = nn.ConvTranspose2d({c.expr}, {c_out.expr}, 2, stride=2)"],
                constants={c_out.expr: (c_out.full, c_out.small)}, params=c.full * c_out.full * 4)


def _conv1d(ctx: Ctx) -> Step:
    b, c, length = ctx.shape
    k = ctx.rng.choice((3, 5))
    c_out = ctx.new_dim("channels3", "out_channels")
    out = (b, c_out, length)
    return Step("conv1d", [f"x = self.conv{ctx.k}(x)"], out, 2.0 * numel(out) * c.full * k,
                (numel(ctx.shape) + numel(out) + c.full * c_out.full * k) * ctx.itemsize,
                init=[f"self.conv{ctx.k} = nn.Conv1d({c.expr}, {c_out.expr}, {k}, padding={k // 2})"],
                constants={c_out.expr: (c_out.full, c_out.small)}, params=c.full * c_out.full * k,
                args={"kernel_size": k})


def _pool(name: str, call: str, rank: int) -> Op:
    def apply(ctx: Ctx) -> Step | None:
        if any(d.small < 4 for d in ctx.shape[2:]):
            return None  # keep at least 2 values per spatial dim at the small size
        out = ctx.shape[:2] + tuple(_half(d) for d in ctx.shape[2:])
        n = numel(ctx.shape)
        return Step(name, [f"x = {call}(x, 2)"], out, n, (n + numel(out)) * ctx.itemsize)

    return Op(name, "pooling", (rank,), apply)


def _global_avg_pool(ctx: Ctx) -> Step:
    n = numel(ctx.shape)
    out = ctx.shape[:2]
    return Step("global_avg_pool", ["x = x.mean(dim=(2, 3))"], out, n, (n + numel(out)) * ctx.itemsize)


def _reduce(name: str, template: str, flops: float) -> Op:
    def apply(ctx: Ctx) -> Step:
        n = numel(ctx.shape)
        out = ctx.shape[:-1]
        return Step(name, [f"x = {template}"], out, flops * n, (n + numel(out)) * ctx.itemsize)

    return Op(name, "reduction", (2, 3, 4), apply)


def _norm_module(name: str, ranks: tuple[int, ...], make: Callable[[Ctx], tuple[str, float] | None]) -> Op:
    """A norm layer held in `self.norm{k}`; `make` gives its constructor and parameter count
    (and, for group norm, its group count as a third item)."""

    def apply(ctx: Ctx) -> Step | None:
        made = make(ctx)
        if made is None:
            return None
        ctor, params = made[:2]
        n = numel(ctx.shape)
        return Step(name, [f"x = self.norm{ctx.k}(x)"], ctx.shape, 8.0 * n, 2 * n * ctx.itemsize,
                    init=[f"self.norm{ctx.k} = {ctor}"], params=params,
                    args={"groups": made[2]} if len(made) > 2 else {})

    return Op(name, "norm", ranks, apply)


def _group_norm(ctx: Ctx) -> tuple[str, float, int] | None:
    c = ctx.shape[1]
    groups = [g for g in (2, 3, 4, 8) if c.full % g == 0 and c.small % g == 0 and g < c.small]
    if not groups:
        return None
    g = ctx.rng.choice(groups)
    return f"nn.GroupNorm({g}, {c.expr})", 2 * c.full, g


def _glu(ctx: Ctx) -> Step | None:
    d = ctx.shape[-1]
    if d.full % 2 or d.small % 2 or d.small < 4:
        return None
    n = numel(ctx.shape)
    out = ctx.shape[:-1] + (_half(d),)
    return Step("glu", ["x = F.glu(x, dim=-1)"], out, 5 * n / 2, (n + numel(out)) * ctx.itemsize)


def _reshape(name: str, line: str, rank: int, rule: Callable[[Shape], Shape]) -> Op:
    def apply(ctx: Ctx) -> Step:
        n = numel(ctx.shape)
        return Step(name, [line], rule(ctx.shape), 0.0, 2 * n * ctx.itemsize)

    return Op(name, "reshape", (rank,), apply)


def _loss(name: str, template: str, kind: str, ranks: tuple[int, ...] = (2, 3)) -> Op:
    """A per-sample loss against a target input `t{k}`: ends the chain."""

    def apply(ctx: Ctx) -> Step:
        if kind == "classes":
            target = InputSpec(f"t{ctx.k}", ctx.shape[:1], "classes", high=ctx.shape[-1].expr)
        else:
            target = InputSpec(f"t{ctx.k}", ctx.shape, kind)
        n = numel(ctx.shape)
        out = ctx.shape[:-1]
        return Step(name, [f"x = {template.format(t=target.name)}"], out, 4.0 * n,
                    (2 * n + numel(out)) * ctx.itemsize, inputs=[target])

    return Op(name, "loss", ranks, apply, terminal=True, weight=1.0)


OPS: tuple[Op, ...] = (
    *(_pointwise_op(*row) for row in _POINTWISE),
    _binary("add_input", "+"),
    _binary("mul_input", "*"),
    Op("add_bias", "elementwise", (2, 3, 4), _add_bias),
    Op("glu", "activation", (2, 3), _glu),
    Op("linear", "matmul", (2, 3), _linear, weight=2.0),
    Op("matmul", "matmul", (2,), _matmul_input),
    Op("bmm", "matmul", (3,), _matmul_input),
    Op("gram", "matmul", (3,), _gram, weight=0.5),
    Op("conv2d", "conv", (4,), _conv2d, weight=2.0),
    Op("depthwise_conv2d", "conv", (4,), _depthwise_conv2d),
    Op("conv_transpose2d", "conv", (4,), _conv_transpose2d, weight=0.5),
    Op("conv1d", "conv", (3,), _conv1d),
    _pool("max_pool2d", "F.max_pool2d", 4),
    _pool("avg_pool2d", "F.avg_pool2d", 4),
    _pool("max_pool1d", "F.max_pool1d", 3),
    _pool("avg_pool1d", "F.avg_pool1d", 3),
    Op("global_avg_pool", "pooling", (4,), _global_avg_pool),
    Op("softmax_channels", "softmax", (4,), lambda ctx: Step(
        "softmax_channels", ["x = torch.softmax(x, dim=1)"], ctx.shape, 5.0 * numel(ctx.shape),
        2 * numel(ctx.shape) * ctx.itemsize)),
    _reduce("sum", "x.sum(dim=-1)", 1),
    _reduce("mean", "x.mean(dim=-1)", 1),
    _reduce("amax", "torch.amax(x, dim=-1)", 1),
    _reduce("logsumexp", "torch.logsumexp(x, dim=-1)", 4),
    _reduce("vector_norm", "torch.linalg.vector_norm(x, dim=-1)", 2),
    _reduce("var", "torch.var(x, dim=-1)", 3),
    _norm_module("layer_norm", (2, 3), lambda ctx: (f"nn.LayerNorm({ctx.shape[-1].expr})", 2 * ctx.shape[-1].full)),
    _norm_module("rms_norm", (2, 3), lambda ctx: (f"nn.RMSNorm({ctx.shape[-1].expr})", ctx.shape[-1].full)),
    _norm_module("batch_norm1d", (2,), lambda ctx: (f"nn.BatchNorm1d({ctx.shape[1].expr})", 2 * ctx.shape[1].full)),
    _norm_module("batch_norm2d", (4,), lambda ctx: (f"nn.BatchNorm2d({ctx.shape[1].expr})", 2 * ctx.shape[1].full)),
    _norm_module("instance_norm", (4,),
                 lambda ctx: (f"nn.InstanceNorm2d({ctx.shape[1].expr}, affine=True)", 2 * ctx.shape[1].full)),
    _norm_module("group_norm", (4,), _group_norm),
    _reshape("transpose", "x = x.transpose(1, 2).contiguous()", 3, lambda s: (s[0], s[2], s[1])),
    _reshape("transpose_hw", "x = x.transpose(2, 3).contiguous()", 4, lambda s: (s[0], s[1], s[3], s[2])),
    _reshape("flatten", "x = x.flatten(1)", 4, lambda s: (s[0], _product(s[1:]))),
    _reshape("merge_batch", "x = x.reshape(-1, x.shape[-1])", 3, lambda s: (_product(s[:2]), s[2])),
    _loss("mse_loss", "F.mse_loss(x, {t}, reduction=\"none\").mean(dim=-1)", "randn"),
    _loss("l1_loss", "F.l1_loss(x, {t}, reduction=\"none\").mean(dim=-1)", "randn"),
    _loss("smooth_l1_loss", "F.smooth_l1_loss(x, {t}, reduction=\"none\").mean(dim=-1)", "randn"),
    _loss("huber_loss", "F.huber_loss(x, {t}, reduction=\"none\", delta=0.5).sum(dim=-1)", "randn"),
    _loss("bce_with_logits", "F.binary_cross_entropy_with_logits(x, {t}, reduction=\"none\").mean(dim=-1)", "rand"),
    _loss("kl_div", "F.kl_div(torch.log_softmax(x, dim=-1), {t}, reduction=\"none\").sum(dim=-1)", "simplex"),
    _loss("cosine_loss", "1 - F.cosine_similarity(x, {t}, dim=-1)", "randn"),
    _loss("cross_entropy", "F.cross_entropy(x, {t}, reduction=\"none\")", "classes", ranks=(2,)),
)
OPS_BY_NAME: dict[str, Op] = {op.name: op for op in OPS}
