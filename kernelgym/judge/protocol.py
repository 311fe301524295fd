"""Framing between the trusted parent and the untrusted child: length-prefixed `torch.save` blobs.

The parent decodes with `torch.load(weights_only=True)`, so a hostile child can send only plain
containers, numbers, strings and tensors, never objects that run code when unpickled.
"""

from __future__ import annotations

import io
import os
import select
import struct
import time
from typing import Any

import torch

_HEADER = struct.Struct("<Q")


class ChannelClosed(EOFError):
    """The other side closed the pipe (the child died or exited)."""


class ChannelTimeout(TimeoutError):
    """No complete message before the deadline."""


class ChannelViolation(ValueError):
    """The other side sent something that is not a valid message."""


def encode(obj: Any) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def decode(data: bytes) -> Any:
    try:
        return torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    except Exception as e:  # anything the safe unpickler refuses is a protocol violation
        raise ChannelViolation(f"undecodable message: {type(e).__name__}: {e}") from None


def send(fd: int, obj: Any) -> None:
    data = encode(obj)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    chunks, remaining = [], n
    while remaining:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChannelTimeout()
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise ChannelClosed()
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def recv(fd: int, max_bytes: int, deadline: float | None = None) -> Any:
    (length,) = _HEADER.unpack(_read_exact(fd, _HEADER.size, deadline))
    if length > max_bytes:
        raise ChannelViolation(f"message of {length:,} bytes exceeds the {max_bytes:,}-byte limit")
    return decode(_read_exact(fd, length, deadline))
