"""What an honest fp32 computation can err by on a task's outputs (RH-14, issue 26).

A flat fp32 tolerance lets an answer that computes in fp16 through on reductions (rounding errors
average out over the reduced dimension) and on small outputs (a fixed atol dwarfs them). Instead,
the trusted parent also runs the reference in float64 on float64 copies of the same inputs, once
per correctness trial, and derives each fp32 output's absolute tolerance from it:

    atol = max(REF_ERROR_FACTOR * max|ref32 - ref64|,  floor * mean|ref64|)

The first term is the fp32 reference's own error, magnified for an honest kernel that sums in
another order or centres differently (it grows where the task is ill-conditioned). The second is
proportional to the output's scale, in units of the roundoff u of the precision the task may
compute in: 512 u for fp32 (u = 2^-24: 3e-5, where an fp16 computation errs by ~1e-3 and an honest
fp32 one by ~1e-6); 16 u for TF32 (u = 2^-11: 7.8e-3) for tasks whose reference runs a matrix
product or convolution (`MATMUL_OPS`, seen by a dispatch mode during the float64 forward), because
`tl.dot`'s default TF32 is standard practice there (KernelBench accepts it at 1e-2). Those tasks
also get rtol >= `TF32_RTOL` (TF32 truncates each operand by up to 2^-10, a same-signed error on
positive data). rtol otherwise stays the config's. Outputs of other dtypes, and tasks whose model
cannot run in float64, keep the flat dtype tolerance. On the CPU the interpreter computes
`tl.dot` exactly whatever its input_precision, so only a GPU exercises the TF32 allowance.

The bound travels with the expected tensor itself (`attach_bounds`, `derived_bound`), so every engine
that compares a trial's `expected` with `compare_outputs` applies it without plumbing.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

REF_ERROR_FACTOR = 8.0
FP32_SCALE_ATOL = 512 * 2.0**-24
TF32_SCALE_ATOL = 32 * 2.0**-11
TF32_RTOL = 2.0**-7  # the Triton tutorial's TF32 matmul + SwiGLU missed 2^-9 on 21 of 8.4M values (H100)
# The TF32 class's elementwise bound is ~8x TF32's own error, and bfloat16's 8-bit mantissa fits under it
# (red-team v4f). Their mean errors separate: sum |a - e| / sum |e| of the TF32-class built-ins with operands
# rounded to TF32 (CPU emulation, every draw but `wide`) is 2e-5..5.6e-4, with operands rounded to bf16
# 3e-4..7e-3 and >= 2.1e-3 on every task's own draw. Between them, about 2x from each side:
TF32_MEAN_REL_ERROR = 1.1e-3
# ... for one matrix product. Where products feed products (SwiGLU: silu(x W1) * (x W2)) the TF32 error
# compounds, and `tl.dot`'s TF32 on Hopper truncates its operands (2^-10, not rounded to nearest): Liger's
# SwiGLU on the Triton tutorial's matmul errs by 1.52e-3 on the H200, which the float64 forward with
# operands truncated to TF32 reproduces (1.518e-3; rounded to nearest 4.7e-4, bf16 3.8e-3). So each
# output's mean bound is also at least TF32_MEAN_FACTOR x that emulation's error on the trial's own inputs
# (the honest answer errs as the emulation does, to 0.3 %; bf16 on one of SwiGLU's two products errs 1.7x it).
TF32_MEAN_FACTOR = 1.25
_CHUNK = 1 << 23  # elements per float64 temporary, as in `compare`
# aten ops where the TF32 allowance applies (a tl.dot in the answer); by the op's base name.
MATMUL_OPS = frozenset({
    "mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "einsum", "tensordot",
    "convolution", "_convolution", "conv1d", "conv2d", "conv3d", "mkldnn_convolution",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "scaled_dot_product_attention",
})
# Every attention backend's op (the float64 reference on a GPU runs `_scaled_dot_product_attention_math`,
# whose name changes across torch releases): by prefix.
MATMUL_PREFIXES = ("_scaled_dot_product_", "_flash_attention", "_efficient_attention", "_cudnn_attention")
_ATTR = "_kernelgym_precision"  # (atol, rtol) set by the trusted parent on its own expected tensors


class _OpNames(TorchDispatchMode):
    """Records the base names of the aten ops a forward runs (thread-local, like every mode)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        self.names.add(func._schema.name.split("::")[-1])
        return func(*args, **(kwargs or {}))


def _truncate_to_tf32(t: Any) -> Any:
    """A float64 tensor's values as an fp32 operand truncated to TF32's 10 mantissa bits (what `tl.dot`
    reads on Hopper), still float64; anything else unchanged."""
    if not (isinstance(t, torch.Tensor) and t.dtype == torch.float64):
        return t
    bits = t.float().view(torch.int32) & ~((1 << 13) - 1)
    return bits.view(torch.float32).double()


class _TruncatedTF32(TorchDispatchMode):
    """Runs every matrix product (`MATMUL_OPS`, `MATMUL_PREFIXES`) on operands truncated to TF32, the rest
    exactly (thread-local: the process-wide allow_tf32 flags stay off for every other reference)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        name = func._schema.name.split("::")[-1]
        if name in MATMUL_OPS or name.startswith(MATMUL_PREFIXES):
            args = tuple(_truncate_to_tf32(a) for a in args)
        return func(*args, **(kwargs or {}))


def _math_attention(q: Any, k: Any, v: Any, attn_mask: Any = None, dropout_p: float = 0.0, is_causal: bool = False,
                    scale: Any = None, enable_gqa: bool = False) -> Any:
    """`F.scaled_dot_product_attention` (no dropout) as its two matrix products around a softmax, so that
    `_TruncatedTF32` truncates P and V too, as a flash-attention kernel's second `tl.dot` reads them."""
    import math

    if enable_gqa and k.size(-3) != q.size(-3):
        k = k.repeat_interleave(q.size(-3) // k.size(-3), -3)
        v = v.repeat_interleave(q.size(-3) // v.size(-3), -3)
    s = torch.matmul(q, k.transpose(-2, -1)) * (scale if scale is not None else 1.0 / math.sqrt(q.size(-1)))
    if is_causal:
        keep = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    if attn_mask is not None:
        s = s.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool else s + attn_mask
    return torch.matmul(torch.softmax(s, dim=-1), v)


class _AttentionAsProducts(TorchFunctionMode):
    """Runs `F.scaled_dot_product_attention` as `_math_attention` (red-team v4i: on the CPU float64 attention
    is one fused operator, so the emulation truncated Q, K and V but never P; an honest flash attention whose
    `tl.dot(p, v)` reads P in TF32, as on Hopper, erred 1.29x the emulation on attention's own draw at the
    small size, above the 1.25x bound)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention and not (
                kwargs.get("dropout_p") or (len(args) > 4 and args[4])):
            return _math_attention(*args, **kwargs)
        return func(*args, **kwargs)


def tf32_errors(model64: torch.nn.Module, wide: list[Any], outs64: list[Any]) -> list[float | None]:
    """Per output: sum |y_tf32 - y64| / sum |y64|, y_tf32 the float64 forward with TF32-truncated matrix
    product operands (None where it cannot be measured). Attention runs as its two products
    (`_AttentionAsProducts`): P is an operand too."""
    try:
        with torch.no_grad(), _AttentionAsProducts(), _TruncatedTF32():
            got = model64(*wide)
    except Exception:
        return [None] * len(outs64)
    got = got if isinstance(got, (tuple, list)) else [got]
    errors: list[float | None] = []
    for g, r in zip(got, outs64):
        if not (isinstance(g, torch.Tensor) and isinstance(r, torch.Tensor) and g.shape == r.shape
                and r.dtype == torch.float64 and r.numel()):
            errors.append(None)
            continue
        err = size = 0.0
        fg, fr = g.reshape(-1), r.reshape(-1)
        for k in range(0, fr.numel(), _CHUNK):
            d, m = fg[k:k + _CHUNK], fr[k:k + _CHUNK]
            stats = torch.stack([torch.nan_to_num((d - m).abs(), nan=0.0, posinf=0.0).sum(),
                                 torch.nan_to_num(m.abs(), nan=0.0, posinf=0.0).sum()]).tolist()
            err, size = err + stats[0], size + stats[1]
        errors.append(err / size if size > 0 else None)
    if len(errors) < len(outs64):
        errors += [None] * (len(outs64) - len(errors))
    return errors


def is_matmul_like(op_names: set[str]) -> bool:
    """Whether a forward that ran these aten ops (base names) is in the TF32 class: a matrix product."""
    return bool(op_names & MATMUL_OPS) or any(n.startswith(MATMUL_PREFIXES) for n in op_names)


def float64_model(model: torch.nn.Module) -> torch.nn.Module | None:
    """A float64 copy of the reference model (its own parameters: the fp32 model is untouched)."""
    try:
        return copy.deepcopy(model).double()
    except Exception:  # a model that cannot be copied keeps the flat tolerance
        return None


# Operators whose effect torch's copies can reproduce (views, strided copies, dtype copies, joins): a
# forward made of these alone is a layout task, where preparing the inputs with torch IS the work.
LAYOUT_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "permute", "transpose", "t", "expand", "contiguous", "clone", "copy_",
    "_to_copy", "to", "as_strided", "select", "slice", "narrow", "squeeze", "unsqueeze", "alias", "detach",
    "lift_fresh", "lift_fresh_copy", "empty", "empty_like", "empty_strided", "new_empty", "resize_", "cat", "stack",
    "split", "split_with_sizes", "chunk", "unbind", "unfold", "flatten", "unflatten", "movedim", "view_as", "expand_as",
    "repeat", "tile", "fill_", "zero_", "zeros", "zeros_like", "ones_like", "full", "full_like", "_reshape_alias"})


def is_layout_only(op_names: set[str]) -> bool:
    """Whether a forward that ran these aten ops (base names) only moves data (`LAYOUT_OPS`)."""
    return bool(op_names) and op_names <= LAYOUT_OPS


@contextlib.contextmanager
def op_names_of() -> Iterator[set[str]]:
    """The base names of the aten ops run inside the block (filled as they run)."""
    ops = _OpNames()
    with ops:
        yield ops.names


def attach_bounds(model64: torch.nn.Module | None, inputs: list[Any], expected: Any) -> bool | None:
    """Runs `model64` on float64 copies of `inputs` and attaches a derived (atol, rtol) to every
    float32 tensor of `expected`. Returns whether the forward ran a matrix product (the TF32 class),
    or None when nothing was attached (no float32 output, or the model fails in float64)."""
    outs = expected if isinstance(expected, (tuple, list)) else [expected]
    if model64 is None or not any(isinstance(e, torch.Tensor) and e.dtype == torch.float32 for e in outs):
        return None
    wide = [v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for v in inputs]
    ops = _OpNames()
    try:
        with torch.no_grad(), ops:
            out64 = model64(*wide)
    except Exception:
        return None
    outs64 = out64 if isinstance(out64, (tuple, list)) else [out64]
    if len(outs64) != len(outs):
        return None
    tf32 = is_matmul_like(ops.names)
    emulated = tf32_errors(model64, wide, outs64) if tf32 else [None] * len(outs)
    for e, e64, err in zip(outs, outs64, emulated):
        bound = derive_bound(e, e64, tf32, err)
        if bound is not None:
            setattr(e, _ATTR, bound)
    return tf32


def derive_bound(e: Any, e64: Any, tf32: bool,
                 tf32_error: float | None = None) -> tuple[float, float, float | None] | None:
    """(atol, rtol, mean relative error allowed or None) for one float32 output from its float64
    reference (module docstring), or None when the float64 output does not fit (another shape, not
    float64, not finite where e is). The mean bound is the TF32 class's only: `TF32_MEAN_REL_ERROR`, or
    `TF32_MEAN_FACTOR` x `tf32_error` (the emulated truncated-TF32 error, `tf32_errors`) where larger."""
    if not (isinstance(e, torch.Tensor) and isinstance(e64, torch.Tensor) and e.dtype == torch.float32
            and e64.dtype == torch.float64 and e64.shape == e.shape and e.numel() > 0):
        return None
    flat, flat64 = e.reshape(-1), e64.reshape(-1).to(e.device)
    worst = abs_sum = bad = count = 0.0
    for k in range(0, flat.numel(), _CHUNK):
        e32, r64 = flat[k:k + _CHUNK].double(), flat64[k:k + _CHUNK]
        finite = torch.isfinite(e32)
        diff = torch.where(finite, (e32 - r64).abs(), torch.zeros_like(r64))
        size = torch.where(finite, r64.abs(), torch.zeros_like(r64))
        stats = torch.stack([diff.max(), size.sum(), finite.sum().double(),
                             (finite & ~torch.isfinite(r64)).sum().double()]).tolist()  # one host read
        worst, abs_sum, count, bad = max(worst, stats[0]), abs_sum + stats[1], count + stats[2], bad + stats[3]
    if bad or worst != worst:  # float64 overflowed or gave NaN where float32 did not
        return None
    scale = abs_sum / count if count else 0.0
    atol = max(REF_ERROR_FACTOR * worst, (TF32_SCALE_ATOL if tf32 else FP32_SCALE_ATOL) * scale,
               torch.finfo(torch.float32).tiny)
    if not tf32:
        return atol, 0.0, None
    mean = TF32_MEAN_REL_ERROR
    if tf32_error is not None and tf32_error == tf32_error:
        mean = max(mean, TF32_MEAN_FACTOR * tf32_error)
    return atol, TF32_RTOL, mean


def derived_bound(e: torch.Tensor) -> tuple[float, float, float | None] | None:
    """The (atol, rtol floor, mean relative error or None) the parent attached to this expected
    tensor, or None (flat rule)."""
    return getattr(e, _ATTR, None)
