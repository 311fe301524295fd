"""Inputs from secret seeds: the task's own `get_inputs()` plus input distributions that break
assumptions a candidate may make about uniform [0, 1) data (RH-12, RH-13, RH-15)."""

from __future__ import annotations

import hashlib
import math
import secrets
import types
from typing import Any

import threading

import torch

_SIGNED_SALT = 0x5EED
# Standard deviation ranges (log-uniform) of the non-task distributions. `wide` reaches values in
# the hundreds: kernels that drop numerically needed steps (softmax without the max) overflow (RH-13).
# `offset` adds a common offset of magnitude 512..1024 (where fp16 values are 0.5 apart): differences
# of inputs (losses, centring) keep their fp32 precision but lose most of it in fp16 or bf16. `huge`
# reaches values beyond fp16's range (65504), which a computation in fp16 turns into inf (RH-14). `tiny`
# (never in a config: `huge`'s stand-in on a GPU for matrix-product tasks, `Reference.draw`) reaches values
# below fp16's normal range (6.1e-5), where fp16 keeps a few bits or none, while TF32 keeps fp32's range.
# (On an H100 an fp16 4096^2 matmul missed on 613 of 16.8M values at this scale: caught, by a thin margin;
# 2^-26 fails every value on the CPU and is the next step once it has run on a GPU.)
_SCALES = {"signed": (0.5, 2.0), "wide": (32.0, 128.0), "offset": (0.5, 2.0), "huge": (2.0**17, 2.0**18),
           "tiny": (2.0**-22, 2.0**-21)}
_OFFSETS = {"offset": (512.0, 1024.0)}
# A distribution's name with this suffix folds its values to |.| where the task's tensor was
# non-negative: the judge's second try when the reference cannot take values of both signs.
FOLDED = "+abs"
# torch's default RNG is process-global: judges running in threads must not interleave between
# seeding it and drawing from it, or the parent's inputs and weights stop matching the child's.
SEEDED_RNG_LOCK = threading.RLock()


def fresh_seed() -> int:
    """A seed the candidate cannot predict: drawn from the OS, never derived from time or a counter."""
    return secrets.randbits(62)


def make_init_inputs(module: types.ModuleType, seed: int) -> list[Any]:
    with SEEDED_RNG_LOCK:
        torch.manual_seed(seed)
        return list(module.get_init_inputs())


def make_inputs(module: types.ModuleType, seed: int, distribution: str, device: str = "cpu") -> list[Any]:
    """The task's inputs for `seed`, transformed by `distribution` (`task`, `signed` or `wide`),
    generated on `device`: on a GPU, `get_inputs()` runs with it as the default device, because
    drawing 64M-element tensors on the CPU took most of an evaluation. The same seed gives the
    same values on the same device model and torch build, which is all the judge needs: the parent
    and its child generate on the same GPU and compare digests.

    `signed` replaces every floating tensor with N(m, s) values (m in [-1, 1], s in [0.5, 2];
    `wide`: s in [32, 128]; `offset`: m + c with one c in [512, 1024] for all tensors, s in [0.5, 2];
    `huge`: s in [2^17, 2^18]), of both signs even where the task draws non-negative values: folding
    them would keep `torch.rand` tasks such as ReLU, LeakyReLU or ELU at x >= 0, where returning the
    input passes (the full-size KernelBench audit found three such level-1 tasks). `signed+abs`
    (`FOLDED`) folds them to |.| where the task's tensor was non-negative, so domains such as log()
    stay valid: the judge's second try (`draw_order`) when the reference cannot take both signs.
    """
    with SEEDED_RNG_LOCK, torch.device(device):
        torch.manual_seed(seed)
        inputs = list(module.get_inputs())
    if distribution == "task":
        return inputs
    base, fold = base_distribution(distribution), distribution.endswith(FOLDED)
    if base not in _SCALES:
        raise ValueError(f"unknown input distribution {distribution!r}")
    low, high = _SCALES[base]
    gen = torch.Generator().manual_seed(seed ^ _SIGNED_SALT)  # small draws: scale and shift
    # One offset for all of a draw's tensors, so that their differences stay small.
    offset = float(torch.empty(1).uniform_(*_OFFSETS[base], generator=gen)) if base in _OFFSETS else 0.0
    out = []
    for i, t in enumerate(inputs):
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0:
            scale = math.exp(float(torch.empty(1).uniform_(math.log(low), math.log(high), generator=gen)))
            shift = float(torch.empty(1).uniform_(-1.0, 1.0, generator=gen))
            if base == "tiny":
                shift *= scale  # a mean of order 1 would hide the tiny spread in a constant
            shift += offset
            bulk = torch.Generator(device=t.device).manual_seed((seed ^ _SIGNED_SALT) + i + 1)
            r = torch.randn(t.shape, generator=bulk, dtype=torch.float32, device=t.device).mul_(scale).add_(shift)
            if fold and bool((t >= 0).all()):
                r = r.abs()
            out.append(r.to(t.dtype))
        else:
            out.append(t)
    return out


def base_distribution(name: str) -> str:
    """`signed+abs` -> `signed`: the distribution a (possibly folded) draw belongs to."""
    return name.removesuffix(FOLDED)


def draw_order(distribution: str) -> tuple[str, ...]:
    """The draws the judge tries for one trial of `distribution`, in order, keeping the first whose
    reference output is finite: both signs, then folded, then the task's own inputs."""
    return ("task",) if distribution == "task" else (distribution, distribution + FOLDED, "task")


_DIGEST_CHUNK = 1 << 24


def digest(values: list[Any]) -> str:
    """Content fingerprint of inputs on any device: the parent and the child must have generated
    the same ones. Computed where the tensors live (copying 64M elements to the host and hashing
    them cost seconds): per tensor, the sum and a position-weighted sum of its 32-bit words, mod
    2**64, so a changed, dropped or moved value changes it. Not a cryptographic hash; it does not
    need to be one: the values come from a seed the answer does not know, and the function itself
    is in the child's harness snapshot (RH-20)."""
    h = hashlib.sha1()
    for v in values:
        if isinstance(v, torch.Tensor):
            t = v.detach().contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(_word_sums(t).encode())
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


def _word_sums(t: torch.Tensor) -> str:
    if t.numel() == 0:
        return "empty"
    raw = t.reshape(-1).view(torch.uint8)
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    plain = weighted = 0
    for start in range(0, words.numel(), _DIGEST_CHUNK):
        w = words[start : start + _DIGEST_CHUNK].to(torch.int64)
        pos = torch.arange(start, start + w.numel(), device=w.device, dtype=torch.int64)
        plain += int(w.sum())
        weighted += int((w * (pos * 2654435761 + 97)).sum())  # int64 arithmetic wraps: fine for a fingerprint
    return f"{plain % (1 << 64)}:{weighted % (1 << 64)}"


def to_device(values: list[Any], device: str) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def clone_values(values: list[Any]) -> list[Any]:
    """Fresh storage for every tensor: a candidate never sees the same addresses twice."""
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def varied_copy(values: list[Any], call: int) -> list[Any]:
    """Fresh storage with every floating value scaled by its own factor in 1 ± (call % 64 + 1) * step
    (a per-call random pattern drawn on the tensor's device): no two timed calls see the same
    values, and no fingerprint invariant to a global scale or shift can match (RH-11, RH-22).
    Zeros, signs and structure (triangular, sparse) stay as they were."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            gen = torch.Generator(device=v.device).manual_seed(0x7A11 + call)
            wobble = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype).mul_(2).sub_(1)
            step = max(2.0**-12, 2 * torch.finfo(v.dtype).eps)  # half precision: still a visible change
            # The amplitude cycles (a time budget can mean thousands of calls): every factor stays
            # within 1 ± 64 * step, so signs and domains (log, sqrt) are kept.
            out.append(v * wobble.mul_((call % 64 + 1) * step).add_(1))
        else:
            out.append(v.clone() if isinstance(v, torch.Tensor) else v)
    return out


def swap_probe(values: list[Any], probe_seed: int, pairs: int = 8) -> list[Any]:
    """Copies of `values` with a few elements of every tensor swapped at positions drawn from
    `probe_seed`. The values stay in the task's domain (same multiset), but the outputs change: a
    candidate that returns a result cached on a few sampled elements, a pointer or a shape is caught
    returning the old output (RH-11)."""
    gen = torch.Generator().manual_seed(probe_seed)
    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.numel() >= 2:
            t = v.detach().clone().contiguous()
            flat = t.view(-1)
            # The first and last elements are the natural keys of a value-keyed cache: a swap there
            # turns the cache's hit into a miss and the cheat goes unseen, so (when the tensor has
            # an interior) swaps stay inside. Distinct positions without randperm(numel), which
            # would cost seconds on 64M elements.
            lo, hi = (1, flat.numel() - 1) if flat.numel() >= 4 else (0, flat.numel())
            drawn = torch.unique(torch.randint(lo, hi, (4 * pairs,), generator=gen))
            drawn = drawn[torch.randperm(drawn.numel(), generator=gen)]
            k = min(pairs, drawn.numel() // 2)
            a, b = drawn[:k].to(flat.device), drawn[k : 2 * k].to(flat.device)
            flat[a], flat[b] = flat[b].clone(), flat[a].clone()
            out.append(t)
        else:
            out.append(v)
    return out
