"""bfloat16 arithmetic under Triton's CPU interpreter as a GPU computes it.

numpy has no bfloat16, so Triton 3.9's interpreter holds bf16 values as their uint16 bit patterns, and
its builder computes on those patterns: on `[-1.5, 2.0, -0.25, 3.0]` `tl.maximum(v, 0.0)` returned `v`,
`v + v` gave `[inf, -0.0, 1.06e37, -1.2e-38]` and `v * 2` zeros. Only bf16 <-> fp32 casts were converted.
Its fp32 -> bf16 cast truncated where the GPU rounds to nearest even.
A GPU computes a bf16 operation as if in fp32 and rounds the result to bf16 (round to nearest even), so
here the builder's float operations widen bf16 operands to fp32 (exact), run the interpreter's own fp32
code, and round a bf16-typed result back. For + - * / that is exactly the GPU's correctly rounded bf16
result (fp32 holds more than 2 * 8 + 2 significand bits, so the double rounding is harmless).

Patched: the float binary ops, min/max, clamp, fcmp*, fneg, fma, dot with bf16 operands, every cast
through `cast_impl` (bf16 <-> ints, fp64, bool: via fp32), and the reductions / scans the interpreter
runs in numpy (`tl.sum`, `tl.cumsum`, `tl.cumprod`, max/min with indices). Left alone, because they only
move or mask bits: loads, stores, bitcasts, `where`, `abs` (clears the sign bit), reshapes. Triton's
front end refuses bf16 in `tl.exp`, `tl.log`, `tl.sqrt` and the other `tl.math` functions on the GPU
and here alike, so their builder entry points never see bf16.
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

log = logging.getLogger(__name__)

# Which argument's type the result takes: the interpreter types a result by that argument.
_RESULT_FROM = {
    **{name: 0 for name in (
        "create_fadd", "create_fsub", "create_fmul", "create_fdiv", "create_frem", "create_precise_divf",
        "create_approx_divf", "create_minimumf", "create_minnumf", "create_maximumf", "create_maxnumf",
        "create_fneg", "create_clampf",
        "create_fcmpOLT", "create_fcmpOGT", "create_fcmpOLE", "create_fcmpOGE", "create_fcmpOEQ", "create_fcmpONE",
        "create_fcmpULT", "create_fcmpUGT", "create_fcmpULE", "create_fcmpUGE", "create_fcmpUEQ", "create_fcmpUNE")},
    "create_fma": 2,  # (x, y, z): typed by the addend
    "create_dot": 2,  # (a, b, d): typed by the accumulator
}
_REDUCTIONS = (("ReduceOps", "sum"), ("ReduceOps", "min_max"), ("ScanOps", "cumsum"), ("ScanOps", "cumprod"))


def install(interp: Any) -> str:
    """Patch the interpreter module's builder and reductions for bf16; '' when done, else why not (idempotent)."""
    builder = getattr(interp, "InterpreterBuilder", None)
    names = [*_RESULT_FROM, "cast_impl"]
    missing = [f"InterpreterBuilder.{n}" for n in names if builder is None or not hasattr(builder, n)]
    missing += [f"{c}.{m}" for c, m in _REDUCTIONS if not hasattr(getattr(interp, c, None), m)]
    missing += [n for n in ("TensorHandle",) if not hasattr(interp, n)]
    if missing:
        why = f"this Triton's interpreter lacks {', '.join(missing)}: its bf16 arithmetic stays on bit patterns"
        log.warning(why)
        return why
    import triton.language as tl

    if getattr(builder.cast_impl, "_kernelgym_bf16", False):
        return ""
    handle = interp.TensorHandle
    for name, result_at in _RESULT_FROM.items():
        setattr(builder, name, _marked(_through_fp32(getattr(builder, name), result_at, handle, tl)))
    builder.cast_impl = _marked(_cast_via_fp32(builder.cast_impl, handle, tl))
    for cls, method in _REDUCTIONS:
        owner = getattr(interp, cls)
        setattr(owner, method, _marked(_reduce_in_fp32(getattr(owner, method), handle, tl)))
    return ""


def _marked(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn._kernelgym_bf16 = True  # type: ignore[attr-defined]
    return fn


def bf16_to_fp32(bits: np.ndarray) -> np.ndarray:
    """bf16 bit patterns as fp32 values (exact: bf16 is fp32's upper half)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def fp32_to_bf16(values: np.ndarray) -> np.ndarray:
    """fp32 values rounded to nearest even bf16, as bit patterns (torch's `.to(torch.bfloat16)`)."""
    values = np.asarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    # The carry would turn a NaN's payload into inf or wrap it: keep its sign and make it quiet instead.
    quiet_nan = (bits >> np.uint32(16)) | np.uint32(0x0040)
    return np.where(np.isnan(values), quiet_nan, rounded).astype(np.uint16)


def _is_bf16(value: Any, tl: Any) -> bool:
    dtype = getattr(value, "dtype", None)
    return isinstance(getattr(value, "data", None), np.ndarray) and getattr(dtype, "scalar", dtype) == tl.bfloat16


def _through_fp32(original: Callable[..., Any], result_at: int, handle: type, tl: Any) -> Callable[..., Any]:
    def op(self: Any, *args: Any) -> Any:
        if not any(_is_bf16(a, tl) for a in args):
            return original(self, *args)
        out = original(self, *[handle(bf16_to_fp32(a.data), tl.float32) if _is_bf16(a, tl) else a for a in args])
        if not _is_bf16(args[result_at], tl):
            return out  # a dot of bf16 operands into an fp32 accumulator
        if out.data.dtype == np.float32:
            return handle(fp32_to_bf16(out.data), tl.bfloat16)
        return handle(out.data, tl.bfloat16)  # a comparison's bools, typed by its operand as the interpreter does

    op.__name__ = getattr(original, "__name__", "op")
    return op


def _cast_via_fp32(original: Callable[..., Any], handle: type, tl: Any) -> Callable[..., Any]:
    # The interpreter converts bf16 <-> fp32 by value, but fp32 -> bf16 truncating (the GPU rounds to nearest
    # even: `tl.store` of an fp32 `x / y` into bf16 came out one ulp low), and every other cast by numpy's
    # astype, which took a bf16 bit pattern as an integer (bf16 -> int32 gave 16256 for 1.0) and an int or
    # fp64 as bits.
    def cast_impl(self: Any, src: Any, dst_type: Any) -> Any:
        src_bf16, dst_bf16 = _is_bf16(src, tl), dst_type.scalar == tl.bfloat16
        if dst_bf16 and getattr(src.dtype, "scalar", src.dtype) == tl.float32:
            return handle(fp32_to_bf16(src.data), tl.bfloat16)
        if src_bf16 == dst_bf16 or tl.float32 in (getattr(src.dtype, "scalar", src.dtype), dst_type.scalar):
            return original(self, src, dst_type)
        if src_bf16:
            return original(self, handle(bf16_to_fp32(src.data), tl.float32), dst_type)
        # Through fp32: rounds twice, which differs from one rounding only for ints beyond 2**24 or fp64
        # values that fall within fp32's rounding error of a bf16 tie.
        return handle(fp32_to_bf16(original(self, src, tl.float32).data), tl.bfloat16)

    return cast_impl


def _reduce_in_fp32(original: Callable[..., Any], handle: type, tl: Any) -> Callable[..., Any]:
    # numpy summed, multiplied and ordered the bit patterns. Here the reduction runs in fp32 and rounds once
    # to bf16 (as torch's bf16 sum does); a GPU rounds after each step of its tree, so sums differ within
    # bf16's tolerance. A min/max is one of the inputs, so it comes back exactly.
    def retype(t: Any, scalar: Any, data: np.ndarray) -> Any:
        ty = tl.block_type(scalar, list(t.shape)) if t.type.is_block() else scalar
        return tl.core.tensor(handle(data, scalar), ty)

    def narrow(out: Any) -> Any:
        if isinstance(out, (list, tuple)):
            return type(out)(narrow(o) for o in out)
        if isinstance(out, tl.core.tensor) and out.dtype == tl.float32:
            return retype(out, tl.bfloat16, fp32_to_bf16(out.handle.data))
        return out

    def reduce(self: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
        first = input[0] if isinstance(input, tuple) else input
        if not (isinstance(first, tl.core.tensor) and first.dtype == tl.bfloat16):
            return original(self, input, *args, **kwargs)
        wide = retype(first, tl.float32, bf16_to_fp32(first.handle.data))
        return narrow(original(self, (wide, *input[1:]) if isinstance(input, tuple) else wide, *args, **kwargs))

    reduce.__name__ = getattr(original, "__name__", "reduce")
    return reduce
