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
_SCALES = {"signed": (0.5, 2.0), "wide": (32.0, 128.0)}
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


def make_inputs(module: types.ModuleType, seed: int, distribution: str) -> list[Any]:
    """The task's inputs for `seed`, transformed by `distribution` (`task`, `signed` or `wide`).

    `signed` replaces every floating tensor with N(m, s) values (m in [-1, 1], s in [0.5, 2];
    `wide`: s in [32, 128]),
    folded to |.| where the task's tensor was non-negative so domains such as log() stay valid.
    """
    with SEEDED_RNG_LOCK:
        torch.manual_seed(seed)
        inputs = list(module.get_inputs())
    if distribution == "task":
        return inputs
    if distribution not in _SCALES:
        raise ValueError(f"unknown input distribution {distribution!r}")
    low, high = _SCALES[distribution]
    gen = torch.Generator().manual_seed(seed ^ _SIGNED_SALT)
    out = []
    for t in inputs:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and t.numel() > 0:
            scale = math.exp(float(torch.empty(1).uniform_(math.log(low), math.log(high), generator=gen)))
            shift = float(torch.empty(1).uniform_(-1.0, 1.0, generator=gen))
            r = torch.randn(t.shape, generator=gen, dtype=torch.float32) * scale + shift
            if bool((t >= 0).all()):
                r = r.abs()
            out.append(r.to(t.dtype))
        else:
            out.append(t)
    return out


def digest(values: list[Any]) -> str:
    """Exact content hash of CPU inputs: the parent and the child must have generated the same ones."""
    h = hashlib.sha1()
    for v in values:
        if isinstance(v, torch.Tensor):
            t = v.detach().contiguous()
            h.update(f"{t.dtype}{tuple(t.shape)}".encode())
            h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        else:
            h.update(repr(v).encode())
    return h.hexdigest()


def to_device(values: list[Any], device: str) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def clone_values(values: list[Any]) -> list[Any]:
    """Fresh storage for every tensor: a candidate never sees the same addresses twice."""
    return [v.clone() if isinstance(v, torch.Tensor) else v for v in values]


def varied_copy(values: list[Any], call: int) -> list[Any]:
    """Fresh storage with every floating value scaled by its own factor in 1 ± (call + 1) * step
    (a per-call random pattern drawn on the tensor's device): no two timed calls see the same
    values, and no fingerprint invariant to a global scale or shift can match (RH-11, RH-22).
    Zeros, signs and structure (triangular, sparse) stay as they were."""
    out = []
    for v in values:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            gen = torch.Generator(device=v.device).manual_seed(0x7A11 + call)
            wobble = torch.rand(v.shape, generator=gen, device=v.device, dtype=v.dtype).mul_(2).sub_(1)
            step = max(2.0**-12, 2 * torch.finfo(v.dtype).eps)  # half precision: still a visible change
            out.append(v * wobble.mul_((call + 1) * step).add_(1))
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
            # distinct positions without randperm(numel), which would cost seconds on 64M elements
            drawn = torch.unique(torch.randint(flat.numel(), (4 * pairs,), generator=gen))
            drawn = drawn[torch.randperm(drawn.numel(), generator=gen)]
            k = min(pairs, drawn.numel() // 2)
            a, b = drawn[:k], drawn[k : 2 * k]
            flat[a], flat[b] = flat[b].clone(), flat[a].clone()
            out.append(t)
        else:
            out.append(v)
    return out
