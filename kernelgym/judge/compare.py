"""Trusted comparison of candidate outputs with expected outputs (runs only in the parent)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.precision import TF32_MEAN_REL_ERROR, derived_bound


@dataclass
class Comparison:
    passed: bool
    max_abs_error: float | None
    max_rel_error: float | None
    mismatched: int
    total: int
    message: str


# Elements compared at a time: float64 copies of a 64M-element output would take ~2.5 GiB of
# temporaries per comparison (several run at once on one GPU); chunks bound them to ~0.3 GiB.
_CHUNK = 1 << 23


def as_list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def layout_problem(expected: torch.Tensor, strides: Any) -> str:
    """Why an output's strides (reported by the child) are not acceptable, or "". They must be the
    reference output's or the contiguous ones for the shape; strides of size-1 dims mean nothing
    and are ignored. Values are compared element by element, so without this a buffer with
    transposed strides filled by a plain copy "transposes" (RH-13 layout)."""
    shape = tuple(expected.shape)
    if not isinstance(strides, (tuple, list)) or len(strides) != len(shape):
        return f"strides {strides!r} do not fit shape {shape}"
    if expected.numel() == 0:
        return ""

    def norm(s: Any) -> tuple:
        return tuple(x for x, n in zip(s, shape) if n != 1)

    actual = norm(strides)
    allowed = {norm(expected.stride()), norm(contiguous_strides(shape))}
    if actual in allowed or _row_major_with_gaps(shape, strides):
        return ""
    return (f"strides {tuple(strides)} are neither the reference's {tuple(expected.stride())} nor contiguous "
            f"{contiguous_strides(shape)}, nor row-major with gaps (a slice of a padded buffer), for shape {shape}")


def _row_major_with_gaps(shape: tuple, strides: Any) -> bool:
    """The contiguous order of dims with room between rows: innermost stride 1, and each outer stride at
    least the span of the dims inside it (a padded buffer's `[:, :cols]`, red-team s12's honest softmax).
    Never a permutation or an overlap, so a plain copy still cannot pass for a transpose (RH-13)."""
    dims = [(int(st), int(n)) for st, n in zip(strides, shape) if n != 1]
    if not dims or any(st <= 0 for st, _ in dims) or dims[-1][0] != 1:
        return False
    span = 1
    for st, n in reversed(dims):
        if st < span:
            return False
        span = st * n
    return True


def _scale_fit_residual(flat_e: torch.Tensor, flat_a: torch.Tensor) -> float:
    """sum |a - c e| with c = sum(a e) / sum(e e), the least-squares common scale (every value finite here)."""
    ae = ee = 0.0
    for k in range(0, flat_e.numel(), _CHUNK):
        e64, a64 = flat_e[k:k + _CHUNK].double(), flat_a[k:k + _CHUNK].double()
        stats = torch.stack([(a64 * e64).sum(), (e64 * e64).sum()]).tolist()
        ae, ee = ae + stats[0], ee + stats[1]
    c = ae / ee if ee > 0 else 1.0
    residual = 0.0
    for k in range(0, flat_e.numel(), _CHUNK):
        residual += float((flat_a[k:k + _CHUNK].double() - c * flat_e[k:k + _CHUNK].double()).abs().sum())
    return residual


def compare_outputs(expected: Any, actual: Any, config: JudgeConfig, scaled: bool = False,
                    layout: list[Any] | None = None, early: bool = False) -> Comparison:
    """Element-wise |a - e| <= atol + rtol*|e| by dtype; NaN/Inf in the answer never pass.

    A float32 output the trusted parent computed also in float64 carries its own (atol, rtol), what
    an fp32 (or, for matrix products, TF32) computation can err by (`judge.precision`), unless
    `config.precision` is "flat". Otherwise (the flat rule) atol is multiplied by the mean
    |expected| when that is above 1 (rounding error grows with the data). `scaled` is the robustness check used for `wide` inputs (values in the hundreds): up to
    1 % of the values may miss the tolerance, because large logits make attention-like tasks
    ill-conditioned. A NaN/Inf where the reference is finite still fails: that is what kernels
    that skip a numerically needed step (softmax without the max) produce (RH-13).

    `layout`, when given, holds per output the child's (strides, is_contiguous) or None: tensors
    arrive here contiguous, so their layout is checked from it (`layout_problem`).

    `early` stops at the first chunk that settles a failure: the verdict is the same, the counts and
    worst errors are then partial (for callers that need only `passed`, like the task audit, whose
    controls at KernelBench's full size are 6 GB tensors that fail in their first chunk)."""
    exp, act = as_list(expected), as_list(actual)
    allowed = (0.01 * sum(e.numel() for e in exp if isinstance(e, torch.Tensor))) if scaled else 0.0
    if len(exp) != len(act):
        return Comparison(False, None, None, 0, 0, f"expected {len(exp)} output(s), got {len(act)}")
    if layout is not None:
        if not isinstance(layout, list) or len(layout) != len(exp):
            return Comparison(False, None, None, 0, 0, "the output layout report does not match the outputs")
        for i, (e, lay) in enumerate(zip(exp, layout)):
            if isinstance(e, torch.Tensor) and isinstance(act[i], torch.Tensor) and tuple(act[i].shape) == tuple(e.shape):
                problem = layout_problem(e, lay[0] if isinstance(lay, (tuple, list)) and lay else lay)
                if problem:
                    label = f"output {i}" if len(exp) > 1 else "output"
                    return Comparison(False, None, None, 0, 0, f"{label}: {problem}")
    worst_abs = worst_rel = 0.0
    mismatched = total = nonfinite = 0
    messages = []
    for i, (e, a) in enumerate(zip(exp, act)):
        label = f"output {i}" if len(exp) > 1 else "output"
        if not isinstance(e, torch.Tensor):
            if isinstance(a, torch.Tensor) or a != e:
                return Comparison(False, None, None, 1, 1, f"{label}: expected {e!r}, got {a!r}")
            continue
        if type(a) is not torch.Tensor:
            return Comparison(False, None, None, 0, 0, f"{label}: expected a torch.Tensor, got {type(a).__name__}")
        if a.dtype != e.dtype:
            return Comparison(False, None, None, 0, 0, f"{label}: dtype {a.dtype} != expected {e.dtype}")
        if a.shape != e.shape:
            return Comparison(False, None, None, 0, 0, f"{label}: shape {tuple(a.shape)} != expected {tuple(e.shape)}")
        a = a.to(e.device)
        total += e.numel()
        if e.numel() == 0:
            continue
        if not e.is_floating_point() and not e.is_complex():
            bad = int((a != e).sum())
            mismatched += bad
            if bad:
                messages.append(f"{label}: {bad} of {e.numel()} integer values differ")
            continue
        atol, rtol = config.tolerance(str(e.dtype).removeprefix("torch."))
        flat_e, flat_a = e.reshape(-1), a.reshape(-1)
        bound = derived_bound(e) if config.precision == "derived" else None
        mean_bound = None
        if bound is not None:  # what an fp32 computation can err by here (`judge.precision`)
            atol, rtol = bound[0], max(rtol, bound[1])
            # The TF32 class's mean error bound; not on `wide` draws, whose large logits make attention
            # ill-conditioned (they may miss 1 % of the values too).
            mean_bound = bound[2] if len(bound) > 2 and not scaled else None
        else:
            atol *= _flat_scale(flat_e)
        bad = bad_values = 0
        err_sum = size_sum = 0.0
        for k in range(0, flat_e.numel(), _CHUNK):
            e64, a64 = flat_e[k:k + _CHUNK].double(), flat_a[k:k + _CHUNK].double()
            finite = torch.isfinite(a64)
            diff = (a64 - e64).abs()
            ok = finite & (diff <= atol + rtol * e64.abs())
            fin_diff = torch.where(finite, diff, torch.zeros_like(diff))
            stats = torch.stack([(~ok).sum().double(), fin_diff.max(), (fin_diff / e64.abs().clamp_min(atol)).max(),
                                 (~finite).sum().double(), fin_diff.sum(), e64.abs().sum()]).tolist()  # one host read
            bad += int(stats[0])
            worst_abs = max(worst_abs, stats[1])
            worst_rel = max(worst_rel, stats[2])
            bad_values += int(stats[3])
            err_sum, size_sum = err_sum + stats[4], size_sum + stats[5]
            if early and (bad_values or mismatched + bad > allowed):
                break
        if mean_bound is not None and not bad and size_sum > 0 and err_sum > mean_bound * size_sum:
            # Every value within the elementwise bound, yet more error overall than TF32 makes: a lower
            # precision than the contract's (bfloat16 operands, say). Counted as one mismatch.
            mismatched += 1
            messages.append(f"{label}: mean relative error {err_sum / size_sum:.2e} above the {mean_bound:.1e} a "
                            "TF32 computation stays under (a lower precision than TF32)")
        elif (mean_bound is not None and not bad and size_sum > 0 and err_sum > TF32_MEAN_REL_ERROR * size_sum
              and config.tf32_scale_fit):
            # Above the class floor only the task's own truncated-TF32 allowance is left, and truncation
            # shrinks every product alike: what remains after fitting one common scale must be within the floor.
            residual = _scale_fit_residual(flat_e, flat_a)
            if residual > TF32_MEAN_REL_ERROR * size_sum:
                mismatched += 1
                messages.append(f"{label}: mean relative error {residual / size_sum:.2e} beyond a common scale of "
                                f"the output, above the {TF32_MEAN_REL_ERROR:.1e} a TF32 computation stays under "
                                "(a lower precision than TF32)")
        mismatched += bad
        if bad_values:
            nonfinite += bad_values
            messages.append(f"{label}: {bad_values} NaN/Inf values")
        if bad:
            messages.append(f"{label}: {bad} of {e.numel()} values outside atol={atol:g}, rtol={rtol:g}")
    passed = mismatched == 0 or (scaled and nonfinite == 0 and mismatched <= 0.01 * total)
    msg = "; ".join(messages) if messages else ("match" if passed else "mismatch")
    if not passed and worst_abs:
        msg += f" (max abs error {worst_abs:.3g}, max rel error {worst_rel:.3g})"
    return Comparison(passed, worst_abs, worst_rel, mismatched, total, msg)


def _flat_scale(flat_e: torch.Tensor) -> float:
    """The flat rule's atol factor, max(1, mean |expected|). Rounding error of an honest fp32
    reduction grows with the values it sums (a 4k-long dot product of N(0,1) values is ~50 in size
    and off by ~1e-3 near its zeros, depending only on summation order). One device-to-host read
    (every read is a sync, and the comparison holds the GPU's shared side)."""
    abs_sum = sum(flat_e[k:k + _CHUNK].double().abs().sum() for k in range(0, flat_e.numel(), _CHUNK))
    return max(1.0, float(abs_sum) / flat_e.numel())


def expected_is_finite(expected: Any) -> bool:
    return all(
        bool(torch.isfinite(e).all()) for e in as_list(expected) if isinstance(e, torch.Tensor) and e.is_floating_point()
    )
