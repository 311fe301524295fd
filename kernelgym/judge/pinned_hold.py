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

With the device path (`device_transfer`, `JudgeConfig.device_transfer`) the buffers are in the replay's
own GPU memory instead (`place="device"`): a kept output is one device copy, and the parent later copies it
device to device. There a later kernel of the answer could reach it, so each device hold is fingerprinted
right after its copy (`device_transfer.fingerprint`, with the parent's key) and the parent checks its copy
against that (`changed_holds`). Device buffers are taken only while the GPU keeps `_DEVICE_RESERVE` of its
memory free after them (the answer's own allocations during the measurement must not fail for them);
otherwise, or when the allocation fails, the holds are pinned host buffers as before.

Only standard-library and torch imports: the replay process imports this, never answer code.
"""

from __future__ import annotations

import math
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


# A device hold leaves at least this share of the GPU's memory free (`torch.cuda.mem_get_info`).
_DEVICE_RESERVE = 0.25


class HoldPool:
    """`count` sets of buffers shaped like one output; `hold` fills one set per kept call.

    A call whose output does not match the layout the pool was built for (or a pool that ran out)
    falls back to `fallback` (the pageable copy): never a wrong hold, at worst a slower one.
    """

    def __init__(self, fallback: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        self._fallback = fallback
        self._meta: list[Meta | None] | None = None
        self._free: list[list[torch.Tensor | None]] = []
        self.pooled = 0  # holds served from the pool (for tests and the phase table)
        self.place = ""  # where the pool's buffers are: device, pinned or pageable
        self.key = 0  # the parent's fingerprint key for device holds (given with the measurement)

    def allocate(self, meta: list[Meta | None] | None, count: int, place: str, device: str = "cpu") -> int:
        """Allocate `count` buffer sets for outputs laid out as `meta`, on `device` (place "device") or in
        host memory ("pinned", "pageable"); the number allocated (fewer where a layout is not dense or
        memory runs out: the rest fall back). Device buffers that do not fit are pinned ones (`place`)."""
        self._meta, self._free, self.place = meta, [], place
        if not meta or any(m is not None and not _dense(m) for m in meta):
            return 0
        if place == "device" and not _device_room(meta, count, device):
            self.place = "pinned"
        for _ in range(max(0, count)):
            try:
                self._free.append([None if m is None else _buffer(m, self.place, device) for m in meta])
            except RuntimeError:  # memory exhausted: the remaining holds copy to pageable memory
                if self.place == "device":  # all or nothing on the device: pinned buffers instead
                    self._free = []
                    return self.allocate(meta, count, "pinned")
                break
        return len(self._free)

    def hold(self, shipped: dict[str, Any]) -> dict[str, Any]:
        """`shipped` (`child.ship_outputs` of a device output) with its tensors copied into the pool's
        buffers (device holds with their fingerprints), or into fresh host memory."""
        if output_meta(shipped) != self._meta or not self._free or self._meta is None:
            return self._fallback(shipped)
        buffers = self._free.pop()
        shipped["outputs"] = [o if buf is None else buf.copy_(o) for o, buf in zip(shipped["outputs"], buffers)]
        if self.place == "device":
            from kernelgym.judge.device_transfer import fingerprint

            shipped["fingerprints"] = [None if buf is None else fingerprint(buf, self.key) for buf in buffers]
        self.pooled += 1
        return shipped


def _buffer(meta: Meta, place: str, device: str) -> torch.Tensor:
    shape, stride, dtype = meta
    if place == "device":
        return torch.empty_strided(shape, stride, dtype=dtype, device=device)
    return torch.empty_strided(shape, stride, dtype=dtype, pin_memory=place == "pinned")


def _device_room(meta: list[Meta | None], count: int, device: str) -> bool:
    """Whether `count` sets fit on `device` with `_DEVICE_RESERVE` of its memory still free after them."""
    if not device.startswith("cuda"):
        return True
    need = count * sum(math.prod(m[0]) * torch.empty(0, dtype=m[2]).element_size() for m in meta if m is not None)
    free, total = torch.cuda.mem_get_info(torch.device(device))
    return need <= free - _DEVICE_RESERVE * total


def changed_holds(outputs: dict[str, Any], key: int) -> list[str]:
    """Which device-held outputs of a `replay_timed_outputs` reply the parent received with other bytes
    than the replay fingerprinted right after their call: a later kernel rewrote them (module docstring)."""
    from kernelgym.judge.device_transfer import fingerprint

    pairs = [(f"the last call on input set {i}", out, fps)
             for i, (out, fps) in enumerate(zip(outputs.get("outputs", []), outputs.get("fingerprints", [])))]
    pairs += [(f"timed call {entry[0]}", entry[1], entry[3]) for entry in outputs.get("spots", []) if len(entry) > 3]
    changed = []
    for where, out, fps in pairs:
        if not isinstance(fps, list) or not isinstance(out, list) or len(fps) != len(out):
            continue  # not held on the device (the replay reports fingerprints for those only)
        if any(isinstance(f, int) and isinstance(o, torch.Tensor) and fingerprint(o, key) != f
               for o, f in zip(out, fps)):
            changed.append(where)
    return changed
