"""Framing between the trusted parent and the untrusted child: a length-prefixed `torch.save`
skeleton, then the raw bytes of every tensor in the message, in a shared output area or the pipe.

The parent decodes the skeleton with `torch.load(weights_only=True)`, so a hostile child can send
only plain containers, numbers, strings and tensors, never objects that run code when unpickled.

Bulk outputs (hundreds of MiB per trial) go through an `OutputArea`: a memfd the parent creates,
sizes and seals before the child starts, so the child copies each output straight from the GPU
into it and the parent copies it straight back to its own GPU memory; no pipe, no intermediate
copies (a 256 MiB output: ~0.07 s instead of ~1.3 s on the H100 machine). On cuda the trusted
replay process may send CUDA IPC handles instead (`share`), which only a parent holding a
`device_transfer.DeviceLink` for that process accepts (`link`); the area stays the fallback.
"""

from __future__ import annotations

import fcntl
import io
import math
import mmap
import os
import select
import struct
import time
from collections.abc import Callable
from typing import Any

import torch

_HEADER = struct.Struct("<Q")
# The child's notice, sent before its `profile` reply, that the profiled calls have finished on the
# GPU: the parent frees the GPU's exclusive side on it (the profiler's teardown is host work).
PROFILE_KERNELS_DONE = "profile_kernels_done"


class ChannelClosed(EOFError):
    """The other side closed the pipe (the child died or exited)."""


class ChannelTimeout(TimeoutError):
    """No complete message before the deadline."""


class ChannelViolation(ValueError):
    """The other side sent something that is not a valid message."""


class DeviceTransferFailed(Exception):
    """A reply's device entries could not be opened; the channel is in sync (every pipe byte was read)
    and the sender still holds the reply: ask for it again through the area."""


# A tensor in a message travels as raw bytes after the message's skeleton, which holds this
# placeholder in its place: no pickling of bulk data, and the receiver reads straight into the
# tensor's own memory (a 256 MiB output went from ~4.6 s to well under a second here).
_TENSOR_KEY = "__kernelgym_tensor__"
_DEVICE = -2  # a tensor's layout offset when it travels as a CUDA IPC handle (the message's "ipc" list)
_PIPE_BYTES = 1 << 20
# The skeleton (everything but tensor bytes) of one message: traces, kernel sources and verdict text
# take kilobytes to a few MiB; a hostile child sending gigabytes of strings would make the trusted
# parent hold several times that while it decodes.
MAX_SKELETON_BYTES = 32 << 20


def widen(fd: int) -> None:
    """Ask for a 1 MiB pipe buffer (default 64 KiB): 16x fewer wake-ups per large message."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    except (OSError, AttributeError):
        pass  # not Linux, or over /proc/sys/fs/pipe-max-size: the default buffer still works


_ALIGN = 64  # every tensor in the area starts on a 64-byte boundary: any dtype's view is aligned


class OutputArea:
    """A shared memory region for the child's replies.

    The parent creates it (`create`) with a fixed capacity and seals its size before the child
    exists, so nothing the child does can make the parent's mapping fault (a shrunk file would
    raise SIGBUS in the trusted process). The child maps it read-write (`attach`); the parent only
    ever copies out of it, once per tensor, into memory of its own: a child that keeps writing
    after replying can change only its own answer. Pages are allocated on first write and freed
    when both sides have closed it."""

    def __init__(self, fd: int, capacity: int) -> None:
        self.fd, self.capacity = fd, capacity
        self._map: mmap.mmap | None = None

    @classmethod
    def create(cls, capacity: int) -> "OutputArea | None":
        """A new sealed area, or None where memfds or seals are unavailable (the pipe is used)."""
        try:
            fd = os.memfd_create("kernelgym-outputs", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        except (AttributeError, OSError):
            return None
        try:
            os.ftruncate(fd, capacity)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
        except (AttributeError, OSError):
            os.close(fd)
            return None
        return cls(fd, capacity)

    @classmethod
    def attach(cls, fd: int) -> "OutputArea":
        """The child's side of an inherited area."""
        return cls(fd, os.fstat(fd).st_size)

    def view(self, offset: int, nbytes: int) -> torch.Tensor:
        """`nbytes` of the area at `offset` as a uint8 tensor (no copy)."""
        if self._map is None:
            self._map = mmap.mmap(self.fd, self.capacity, flags=mmap.MAP_SHARED,
                                  prot=mmap.PROT_READ | mmap.PROT_WRITE)
        return torch.frombuffer(self._map, dtype=torch.uint8, count=nbytes, offset=offset)

    def close(self) -> None:
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:  # a view is still alive somewhere: the mapping goes with it
                pass
            self._map = None
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def encode(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def decode(data: bytes) -> Any:
    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as e:  # anything the safe unpickler refuses is a protocol violation
        raise ChannelViolation(f"undecodable message: {type(e).__name__}: {e}") from None


def _strip(obj: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(obj, torch.Tensor) and not obj.requires_grad:
        tensors.append(obj.detach())
        return {_TENSOR_KEY: len(tensors) - 1}
    if isinstance(obj, dict):
        return {k: _strip(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        items = [_strip(v, tensors) for v in obj]
        return items if isinstance(obj, list) else tuple(items)
    return obj


def _fill(obj: Any, tensors: list[torch.Tensor]) -> Any:
    if isinstance(obj, dict):
        if set(obj) == {_TENSOR_KEY}:
            index = obj[_TENSOR_KEY]
            if not isinstance(index, int) or not 0 <= index < len(tensors):
                raise ChannelViolation(f"tensor placeholder {index!r} out of range")
            return tensors[index]
        return {k: _fill(v, tensors) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_fill(v, tensors) for v in obj]
    if isinstance(obj, tuple):
        return tuple(_fill(v, tensors) for v in obj)
    return obj


def send(fd: int, obj: Any, area: OutputArea | None = None,
         share: Callable[[torch.Tensor], Any] | None = None) -> None:
    """Write one message. With `share` (the replay's `Sharer.share`), each tensor it gives a
    descriptor for (CUDA tensors of its device) travels as that descriptor; the other tensors go into `area` when they all fit,
    else through the pipe. Every copy happens before the first byte is written, so a copy that fails
    (a GPU fault surfacing late) raises here with the channel still clean for an error reply."""
    tensors: list[torch.Tensor] = []
    skeleton = _strip(obj, tensors)
    if any(t.device.type == "cuda" for t in tensors):
        torch.cuda.synchronize()  # nothing queued still writes what is copied or shared below
    shared = [share(t) if share is not None else None for t in tensors]
    sizes = [t.numel() * t.element_size() for t in tensors]
    offsets, end = [], 0
    for n, desc in zip(sizes, shared):
        offsets.append(_DEVICE if desc is not None else end)
        end += 0 if desc is not None else -(-n // _ALIGN) * _ALIGN
    use_area = area is not None and tensors and end <= area.capacity
    inline: list[torch.Tensor] = []
    for t, n, off in zip(tensors, sizes, offsets):
        if not n or off == _DEVICE:
            continue
        if use_area:
            area.view(off, n).view(t.dtype).view(t.shape).copy_(t)
        else:
            inline.append(t.cpu().contiguous())
    if use_area and any(t.device.type == "cuda" for t in tensors):
        torch.cuda.synchronize()
    layout = [(str(t.dtype).removeprefix("torch."), list(t.shape), n, off if use_area or off == _DEVICE else -1)
              for t, n, off in zip(tensors, sizes, offsets)]
    body = {"skeleton": skeleton, "tensors": layout}
    if any(d is not None for d in shared):
        body["ipc"] = shared
    meta = encode(body)
    _write_all(fd, memoryview(_HEADER.pack(len(meta)) + meta))
    for t in inline:
        _write_all(fd, memoryview(t.view(-1).view(torch.uint8).numpy()))


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_into(fd: int, target: memoryview, deadline: float | None) -> None:
    pos = 0
    while pos < len(target):
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
        n = os.readv(fd, [target[pos : pos + (8 << 20)]])
        if not n:
            raise ChannelClosed()
        pos += n


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    buf = bytearray(n)
    _read_into(fd, memoryview(buf), deadline)
    return bytes(buf)


def recv(fd: int, max_bytes: int, deadline: float | None = None, stats: dict[str, float] | None = None,
         area: OutputArea | None = None, device: str = "cpu", link: Any = None) -> Any:
    """One message. Everything a hostile sender controls is checked before memory is committed:
    the skeleton's size, each tensor's dtype, shape, byte count and area offset, and the total
    against `max_bytes`. Tensors from the area are copied to `device` (the comparison's device);
    those from the pipe arrive on the CPU; device entries only from a sender this side holds a
    `link` (`device_transfer.DeviceLink`) for, copied by it after every pipe byte was read
    (`DeviceTransferFailed` when it cannot). `stats`, when given, gets `body_s`: the seconds spent
    copying tensor bytes after the skeleton, and `device_s`: those of them spent on device entries."""
    (length,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if length > min(max_bytes, MAX_SKELETON_BYTES):
        raise ChannelViolation(f"message of {length:,} bytes (without its tensors) exceeds the "
                               f"{min(max_bytes, MAX_SKELETON_BYTES):,}-byte limit")
    meta = decode(_read_exact(fd, length, deadline))
    if (not isinstance(meta, dict) or set(meta) - {"ipc"} != {"skeleton", "tensors"}
            or not isinstance(meta["tensors"], list)):
        raise ChannelViolation("message without a skeleton and tensor layout")
    ipc = meta.get("ipc")
    if ipc is not None and (link is None or not isinstance(ipc, list) or len(ipc) != len(meta["tensors"])):
        raise ChannelViolation("device entries from a process that may not send them")
    total = length
    tensors: list[Any] = []
    on_device: list[tuple[int, torch.dtype, list[int], Any]] = []
    t0 = time.perf_counter()
    for i, entry in enumerate(meta["tensors"]):
        dtype, shape, nbytes, offset = _checked_layout(entry)
        total += nbytes
        if total > max_bytes:
            raise ChannelViolation(f"message of more than {max_bytes:,} bytes exceeds the limit")
        if offset == _DEVICE:
            if ipc is None or ipc[i] is None:
                raise ChannelViolation("a device entry without its descriptor")
            on_device.append((i, dtype, shape, ipc[i]))
            tensors.append(None)
            continue
        if offset >= 0:
            if area is None or offset % _ALIGN or offset + nbytes > area.capacity:
                raise ChannelViolation(f"tensor at offset {offset} of {nbytes} bytes is outside the output area")
            # One copy out of the shared pages into memory the child cannot touch.
            shared = area.view(offset, nbytes).view(dtype).reshape(shape) if nbytes else torch.empty(shape, dtype=dtype)
            tensors.append(shared.to(device, copy=True))
            continue
        raw = torch.empty(nbytes, dtype=torch.uint8)
        if nbytes:
            _read_into(fd, memoryview(raw.numpy()), deadline)
        tensors.append(raw.view(dtype).reshape(shape))
    t1 = time.perf_counter()
    try:
        if on_device:
            copies = link.open_all([(dtype, shape, desc) for _, dtype, shape, desc in on_device])
            for (i, *_), copy in zip(on_device, copies):
                tensors[i] = copy
    finally:  # also when the device entries fail: the parent's seconds are counted either way
        if stats is not None:
            stats["body_s"] = time.perf_counter() - t0
            stats["device_s"] = time.perf_counter() - t1 if on_device else 0.0
    return _fill(meta["skeleton"], tensors)


def _checked_layout(entry: Any) -> tuple[torch.dtype, list[int], int, int]:
    try:
        name, shape, nbytes, offset = entry
        if not isinstance(offset, int):
            raise ValueError
        dtype = getattr(torch, name)
        if not isinstance(dtype, torch.dtype) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError
        expected = math.prod(shape) * torch.empty(0, dtype=dtype).element_size()
    except (TypeError, ValueError, AttributeError):
        raise ChannelViolation(f"bad tensor layout {entry!r:.200}") from None
    if expected != nbytes:
        raise ChannelViolation(f"tensor layout {entry!r:.200} does not add up")
    return dtype, shape, nbytes, offset
