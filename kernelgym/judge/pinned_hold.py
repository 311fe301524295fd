"""Host buffers for the outputs a measurement keeps (judge v4's replay process).

A timed output that is checked later (the last call per input set, the secret spot sample) is
copied to host memory right after its call, inside the exclusive timing lock: on the GPU a later
kernel could repair it (RH-21). Copied into fresh pageable memory, a 256 MiB output took ~0.19 s
on an H100 host (page faults and the driver's staging), nine of them 1.7 s of every correct
answer's exclusive GPU time: most of the measurement, while its kernels ran 0.03 s. Here the
buffers are pinned and allocated before the lock is taken (`HoldPool.allocate`, in the request
that draws the timing inputs), so inside it a kept output is one DMA into memory it already owns.

Pinned pages are mapped into the GPU's address space (UVA), where pageable ones are not: a kernel could
write them if it held their address. None is handed one, none can compute one (pointer/integer casts are
refused in the compiled IR, `launch_hook.forged_pointer_ops`), and probing by offsets from a handed pointer
faults on the unmapped space between device and host ranges first (red-team v4f: a reasoned risk, not a
tested defence).

Only standard-library and torch imports: the replay process imports this, never answer code.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

Meta = tuple[tuple[int, ...], tuple[int, ...], torch.dtype]  # shape, strides, dtype of one output tensor


def output_meta(shipped: dict[str, Any]) -> list[Meta | None] | None:
    """The tensors' layout of one shipped output (`child.ship_outputs`), None for a non-tensor entry;
    None when the output was not shippable at all."""
    if "outputs" not in shipped:
        return None
    return [(tuple(o.shape), tuple(o.stride()), o.dtype) if type(o) is torch.Tensor else None
            for o in shipped["outputs"]]


def _dense(meta: Meta) -> bool:
    """Strides that cover exactly numel() elements, non-overlapping (a permutation of a contiguous
    layout): `empty_strided` then allocates the tensor's own bytes and nothing else."""
    shape, stride, _ = meta
    dims = sorted((s, n) for n, s in zip(shape, stride) if n != 1)
    expected = 1
    for s, n in dims:
        if s != expected:
            return False
        expected *= n
    return True


class HoldPool:
    """`count` sets of host buffers shaped like one output; `hold` fills one set per kept call.

    A call whose output does not match the layout the pool was built for (or a pool that ran out)
    falls back to `fallback` (the pageable copy): never a wrong hold, at worst a slower one.
    """

    def __init__(self, fallback: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._fallback = fallback
        self._meta: list[Meta | None] | None = None
        self._free: list[list[torch.Tensor | None]] = []
        self.pooled = 0  # holds served from the pool (for tests and the phase table)

    def allocate(self, meta: list[Meta | None] | None, count: int, pin: bool) -> int:
        """Allocate `count` buffer sets for outputs laid out as `meta`; the number allocated (fewer where
        a layout is not dense or memory runs out: the rest fall back)."""
        self._meta, self._free = meta, []
        if not meta or any(m is not None and not _dense(m) for m in meta):
            return 0
        for _ in range(max(0, count)):
            try:
                self._free.append([None if m is None else torch.empty_strided(m[0], m[1], dtype=m[2], pin_memory=pin)
                                   for m in meta])
            except RuntimeError:  # pinned memory exhausted: the remaining holds copy to pageable memory
                break
        return len(self._free)

    def hold(self, shipped: dict[str, Any]) -> dict[str, Any]:
        """`shipped` (`child.ship_outputs` of a device output) with its tensors copied to host memory."""
        if output_meta(shipped) != self._meta or not self._free or self._meta is None:
            return self._fallback(shipped)
        buffers = self._free.pop()
        shipped["outputs"] = [o if buf is None else buf.copy_(o) for o, buf in zip(shipped["outputs"], buffers)]
        self.pooled += 1
        return shipped
