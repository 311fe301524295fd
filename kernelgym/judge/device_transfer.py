"""Bulk tensors from the trusted replay process to the parent through the GPU (CUDA IPC), judge v4.

The output area (`protocol.OutputArea`) moves every output twice through host memory: the sender
copies it GPU -> area, the parent area -> its GPU. With a few GPUs per host that memory traffic is
the shared bottleneck. On cuda, the replay process (never the answer's recording process) can
instead send a CUDA IPC handle of each output's storage (`Sharer.share`, torch's `_share_cuda_`);
the parent opens it, copies device to device into memory of its own and closes it before it sends
the next request (`DeviceLink.open_all`). Anything that goes wrong falls back to the area:

- the replay cannot prepare sharing before its confinement (`Sharer.prepare`): area for its life;
- the parent cannot open a handle (containers, permissions, another device): it asks for the same
  reply again through the area (`resend`), and this process never tries the device path again
  for that GPU (`usable`, `mark_broken`);
- the first contact per process and GPU opens a handle in a throwaway subprocess first, with a
  time limit (`_first_contact`): a driver or sandbox where legacy IPC hangs or crashes costs that
  subprocess, never the judge.
`EvalResult.transfer` says which path the evaluation's bulk replies took, `transfer_note` why not
the device.

Trust argument. The replay process runs no answer Python, but it runs the answer's compiled
kernels, which may read and write anywhere in that process's GPU address space (out of bounds of
the buffers they were handed: pointer offsets are ordinary Triton). So:
1. The parent's memory is never mapped into the replay process: handles go only from the replay to
   the parent. The parent maps the replay's segment, copies the tensor's own bytes (the extent is
   checked against the shared storage's size first) and closes the mapping again.
2. Nothing the parent reads is still being written: the replay synchronises its device before a
   reply (`protocol.send`) and then blocks reading the next request, which the parent sends only
   after its copies are complete; no kernel of the answer is running or queued in that window
   (kernels cannot launch kernels in Triton). The replay releases the shared storages' reference
   counters only on the next request, so their memory is not reused while mapped.
3. Outputs held during timing stay in the replay's GPU memory while later calls of the answer run
   there (the rest of the measurement, the profile): a kernel could rewrite an output it skimped on
   once it knows the answer (RH-21). Each held output is fingerprinted right after its call, before
   any kernel of the answer runs again, by trusted torch kernels with a key the parent drew
   (`fingerprint`, kept in pageable host memory, which no kernel can address); the parent
   fingerprints its copy, and a change is a wrong output. The key lives in kernel parameters and
   in freed scratch of the fingerprint's own kernels for moments (zeroed after use): a reasoned
   residual risk, as the pinned host holds' address-space exposure (`pinned_hold`).
4. The answer's recording process never shares: a device entry from any process the parent did
   not give a `DeviceLink` is a protocol violation (`protocol.recv`).

Torch's CUDA IPC reference counting keeps a shared storage's memory alive until the receiver
decrements a counter in a shared-memory file. The replay creates that file and maps it itself
before it is confined (Landlock forbids creating files outside its scratch dir afterwards) and
releases its own counters; the parent opens handles without a counter (its decrement is a no-op).
The interprocess event torch would attach is not used (the replay has synchronised; opening one
per tensor would leak an event in the parent each time).

Only standard-library and torch imports: the replay process imports this, never answer code.
"""

from __future__ import annotations

import hashlib
import logging
import math
import mmap
import os
import re
import struct
import subprocess
import sys
import threading
import time
from typing import Any

import torch

from kernelgym.judge.protocol import DeviceTransferFailed

log = logging.getLogger(__name__)

# torch's RefcountedMapAllocator puts its own reference count in the first 64 bytes of the counters
# file; the int64 counters follow. Checked on the anchor's counter before anything relies on it.
_COUNTERS_AT = 64
_FIRST_CONTACT_TIMEOUT_S = 90.0
_DESCRIPTOR_LEN = 7


class Sharer:
    """The replay process's side: IPC descriptors of its CUDA tensors, counters released on the next request."""

    def __init__(self, device: str, counters: mmap.mmap, name: bytes, anchor: torch.Tensor) -> None:
        self.device = torch.device(device)
        if self.device.index is None:  # "cuda": tensors report their index
            self.device = torch.device("cuda", torch.cuda.current_device())
        self._counters, self._name, self._anchor = counters, name, anchor  # the anchor keeps the file in use
        self._pending: list[int] = []
        self.uuid = device_uuid(self.device)

    @classmethod
    def prepare(cls, device: str) -> "Sharer | str":
        """Before confinement: share a small anchor tensor (torch creates its counters file) and map that
        file here. The Sharer, or why the device path is unavailable in this process."""
        try:
            anchor = torch.zeros(8, dtype=torch.int64, device=device)
            _, _, _, _, name, slot, _, _ = anchor.untyped_storage()._share_cuda_()
            fd = os.open("/dev/shm" + name.decode(), os.O_RDWR)
            try:
                counters = mmap.mmap(fd, 0)
            finally:
                os.close(fd)
        except (RuntimeError, OSError, ValueError, UnicodeDecodeError) as e:
            return f"the replay process cannot share CUDA memory: {type(e).__name__}: {str(e)[:200]}"
        if _counter(counters, slot) != 1:
            counters.close()
            return "the replay process cannot track torch's CUDA IPC counters (unknown file layout)"
        return cls(device, counters, name, anchor)

    def share(self, t: torch.Tensor) -> list[Any] | None:
        """The descriptor of `t` (device, handle, storage bytes, storage offset in the segment, element
        offset, strides, GPU uuid), or None: send it through the area."""
        if t.device != self.device or not t.numel():
            return None
        try:
            dev, handle, size, offset, name, slot, _, _ = t.untyped_storage()._share_cuda_()
        except RuntimeError:
            return None
        if name != self._name:  # a new counters file (the first one full): not ours to release
            return None
        self._pending.append(slot)
        return [int(dev), bytes(handle), int(size), int(offset), int(t.storage_offset()), list(t.stride()), self.uuid]

    @property
    def counters_file(self) -> str:
        """The counters file's shared-memory name: the parent removes it once this process is gone (a
        killed process leaves it behind)."""
        return self._name.decode()

    def release(self) -> None:
        """The parent has copied (or given up on) the last reply's tensors: their memory may be reused."""
        for slot in self._pending:
            struct.pack_into("<q", self._counters, _COUNTERS_AT + 8 * slot, 0)
        self._pending.clear()


def remove_counters(name: Any) -> None:
    """Unlink a closed replay process's counters file (`Sharer.counters_file`); only names torch gives."""
    if isinstance(name, str) and re.fullmatch(r"/torch_\d+_\d+", name):
        try:
            os.unlink("/dev/shm" + name)
        except OSError:
            pass  # already gone: the process exited cleanly and unlinked it


def _counter(counters: mmap.mmap, slot: int) -> int:
    return struct.unpack_from("<q", counters, _COUNTERS_AT + 8 * slot)[0]


def device_uuid(device: torch.device) -> str:
    """The GPU's uuid as torch reports it ("" where it does not): indices differ between processes
    with different CUDA_VISIBLE_DEVICES, uuids do not."""
    try:
        return str(getattr(torch.cuda.get_device_properties(device), "uuid", ""))
    except (RuntimeError, AssertionError):
        return ""


# Per process: GPU uuid (or index) -> "" where the device path works, the reason where it does not.
_STATE: dict[str, str] = {}
_STATE_LOCK = threading.Lock()


def usable(device: str) -> bool:
    """Whether this process may ask a replay process on `device` for the device path (not known broken)."""
    return _STATE.get(_key(torch.device(device))) in (None, "")


def mark_broken(device: str, reason: str) -> None:
    _STATE[_key(torch.device(device))] = reason
    log.warning("device transfer off for %s in this process: %s", device, reason)


def _key(device: torch.device) -> str:
    return device_uuid(device) or f"index:{device.index or 0}"


def checked_descriptor(desc: Any, shape: list[int], element_size: int) -> tuple[int, bytes, int, int, int, list[int], str]:
    """A descriptor's fields, typed, with the tensor's extent inside the shared storage; else
    `DeviceTransferFailed` (the replay is trusted, but a wrong descriptor must never make the parent
    read memory it was not shown)."""
    try:
        dev, handle, size, offset, start, stride, uuid = desc
        ints = (dev, size, offset, start)
        if (len(desc) != _DESCRIPTOR_LEN or not all(type(v) is int and v >= 0 for v in ints)
                or not isinstance(handle, bytes) or not isinstance(uuid, str)
                or not isinstance(stride, list) or len(stride) != len(shape)
                or not all(type(s) is int and s >= 0 for s in stride)):
            raise ValueError
    except (TypeError, ValueError):
        raise DeviceTransferFailed(f"malformed device descriptor {desc!r:.200}") from None
    last = start + sum((n - 1) * s for n, s in zip(shape, stride)) if math.prod(shape) else start - 1
    if (last + 1) * element_size > size:
        raise DeviceTransferFailed(f"a tensor reaching byte {(last + 1) * element_size} of a {size}-byte shared storage")
    return dev, handle, size, offset, start, stride, uuid


class DeviceLink:
    """The parent's side for one replay process on `device`: opens each device entry of a reply,
    copies it into the parent's own memory, closes it."""

    def __init__(self, device: str) -> None:
        self.device = torch.device(device)
        if self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.uuid = device_uuid(self.device)
        self.opened = 0  # tensors received this way

    def open_all(self, entries: list[tuple[torch.dtype, list[int], Any]]) -> list[torch.Tensor]:
        """Copies of the described tensors (contiguous, on the parent's device), all-or-nothing:
        `DeviceTransferFailed` when any cannot be opened (the caller asks for the area)."""
        if not entries:
            return []
        key = _key(self.device)
        parsed = []
        for dtype, shape, desc in entries:
            dev, handle, size, offset, start, stride, uuid = checked_descriptor(
                desc, shape, torch.empty(0, dtype=dtype).element_size())
            if (uuid != self.uuid) if uuid and self.uuid else dev != self.device.index:
                raise DeviceTransferFailed(f"a handle from another GPU ({uuid or dev}, this is {self.uuid or self.device})")
            parsed.append((dtype, shape, dev, handle, size, offset, start, stride))
        probed = ""
        if key not in _STATE:
            with _STATE_LOCK:
                if key not in _STATE:
                    reason, probed = _first_contact(parsed[0])
                    if reason:
                        mark_broken(str(self.device), reason)
                    else:
                        _STATE[key] = ""
        if _STATE.get(key):
            raise DeviceTransferFailed(_STATE[key])
        try:
            copies = [self._copy(*p) for p in parsed]
            torch.cuda.synchronize(self.device)  # every copy done before the mappings close and the reply is acknowledged
        except torch.OutOfMemoryError as e:
            # The copies' sizes are the answer's (its outputs' shapes, up to the message limit): this reply
            # goes through the area, and the device path stays on for the evaluations beside and after it.
            raise DeviceTransferFailed(f"out of GPU memory for a reply's copies: {str(e)[:160]}") from None
        except RuntimeError as e:
            mark_broken(str(self.device), f"opening a CUDA IPC handle failed: {str(e)[:200]}")
            raise DeviceTransferFailed(str(e)[:200]) from None
        if probed:  # the first contact: what this process read must be what the probe read
            if _sha256(copies[0]) != probed:
                mark_broken(str(self.device), "a CUDA IPC handle read back other bytes here than in the probe")
                raise DeviceTransferFailed(_STATE[key])
        self.opened += len(copies)
        return copies

    def _copy(self, dtype: torch.dtype, shape: list[int], dev: int, handle: bytes, size: int, offset: int,
              start: int, stride: list[int]) -> torch.Tensor:
        shared = open_view(dtype, shape, dev, handle, size, offset, start, stride, self.device)
        return torch.empty(shape, dtype=dtype, device=self.device).copy_(shared)


def open_view(dtype: torch.dtype, shape: list[int], dev: int, handle: bytes, size: int, offset: int,
              start: int, stride: list[int], device: torch.device) -> torch.Tensor:
    """The shared tensor itself (mapped; unmapped when the view is freed). No reference counter and
    no interprocess event (module docstring)."""
    storage = torch.UntypedStorage._new_shared_cuda(dev, handle, size, offset, b"", 0, b"", False)
    return torch.empty(0, dtype=dtype, device=device).set_(storage, start, shape, stride)


def _first_contact(parsed: tuple) -> tuple[str, str]:
    """Open the first handle in a subprocess with a time limit: ("", sha256 of the bytes it read), or
    (why not, "")."""
    dtype, shape, dev, handle, size, offset, start, stride = parsed
    spec = repr((str(dtype).removeprefix("torch."), shape, dev, handle.hex(), size, offset, start, stride))
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, "-m", "kernelgym.judge.device_transfer"], input=spec.encode(),
                              capture_output=True, timeout=_FIRST_CONTACT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return f"opening a CUDA IPC handle did not finish in {_FIRST_CONTACT_TIMEOUT_S:.0f} s (probe subprocess)", ""
    except OSError as e:
        return f"the IPC probe subprocess could not start: {e}", ""
    digest = done.stdout.decode(errors="replace").strip()
    if done.returncode != 0 or len(digest) != 64:
        tail = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or [f"exit {done.returncode}"]
        return f"the IPC probe subprocess failed: {tail[0][:200]}", ""
    log.info("CUDA IPC works from replay processes (probe %.2f s)", time.perf_counter() - t0)
    return "", digest


def _sha256(t: torch.Tensor) -> str:
    return hashlib.sha256(t.contiguous().cpu().reshape(-1).view(torch.uint8).numpy().tobytes()).hexdigest()


def _probe_main() -> None:
    """`python -m kernelgym.judge.device_transfer` < spec: open one handle, read it, exit 0."""
    import ast

    name, shape, dev, handle, size, offset, start, stride = ast.literal_eval(sys.stdin.read())
    # A fresh process has no CUDA context and torch's caching allocator is not set up yet: opening an IPC
    # handle before that dereferences its empty per-device state (SIGSEGV on the GPU, torch 2.11).
    torch.cuda.set_device(dev)
    torch.cuda.init()
    view = open_view(getattr(torch, name), shape, dev, bytes.fromhex(handle), size, offset, start, stride,
                     torch.device("cuda", dev))
    print(_sha256(view))


# -- fingerprints of held outputs ----------------------------------------------------------------------

_CHUNK = 1 << 22  # words per step: three int64 temporaries of 32 MiB
_MIX = 0x2545F4914F6CDD1D  # odd: a bijection mod 2**64
_KEEP33, _KEEP32 = (1 << 33) - 1, (1 << 32) - 1  # masks that make torch's arithmetic `>>` on int64 logical


def fingerprint(t: torch.Tensor, key: int) -> int:
    """A keyed digest of `t`'s bytes in element order (layout-independent), on `t`'s device, 64 bits:
    any change to the bytes changes it but with probability ~2**-64 for a writer that does not know `key`.

    Each word goes through multiplications by the key and *logical* xor-shifts (each step a bijection),
    ending in a shift, so every bit of a word's term depends on every bit of the key: a kernel that finds a
    digest or a partial sum in freed memory and knows the words (its own output) cannot recover the key
    piece by piece (red-team ipc: with one arithmetic shift and the key's multiplication last, the low t
    bits of the digest depended only on the low ~t+30 key bits, a guess-and-determine of ~2**30 steps).
    The keyed sums are zeroed after use like the temporaries."""
    data = t.detach().contiguous().reshape(-1).view(torch.uint8)
    words = data.view(torch.int32) if data.numel() % 4 == 0 else data
    k1, k2 = _signed(key | 1), _signed((key * _MIX) | 1)
    acc = torch.zeros((), dtype=torch.int64, device=t.device)
    for begin in range(0, words.numel(), _CHUNK):
        w = words[begin:begin + _CHUNK].to(torch.int64)
        h = torch.arange(begin, begin + w.numel(), dtype=torch.int64, device=t.device)
        h.mul_(k1).bitwise_xor_(w).mul_(k2)
        w.copy_(h).bitwise_right_shift_(31).bitwise_and_(_KEEP33)
        h.bitwise_xor_(w).mul_(k1)
        w.copy_(h).bitwise_right_shift_(32).bitwise_and_(_KEEP32)
        h.bitwise_xor_(w)
        part = h.sum()
        acc += part
        part.zero_()
        h.zero_()  # no keyed value stays behind in freed memory
        w.zero_()
    value = int(acc.item())
    acc.zero_()
    return value


def _signed(v: int) -> int:
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


if __name__ == "__main__":
    _probe_main()
