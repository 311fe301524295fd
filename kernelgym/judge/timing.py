"""Honest GPU timing, shared by the trusted reference side and the candidate child.

CUDA events around each call, a device-wide synchronize before reading them (work left on other
streams is waited for), L2 flushed before every call, warm-up excluded, fresh input storage per
call, `torch.no_grad()`. Only one measurement runs on a GPU at a time (`timing_lock`).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch

from kernelgym.judge.inputs import clone_values

_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def timing_lock(device: str) -> Iterator[None]:
    """Serialise measurements per GPU across threads and processes of this machine."""
    index = torch.device(device).index or 0
    with _THREAD_LOCKS_GUARD:
        lock = _THREAD_LOCKS.setdefault(str(index), threading.Lock())
    path = os.path.join(tempfile.gettempdir(), f"kernelgym-timing-gpu{index}.lock")
    with lock, open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def time_calls(
    fn: Callable[..., Any],
    input_sets: list[list[Any]],
    warmup: int,
    reps: int,
    flush_bytes: int,
) -> tuple[list[float], list[float], list[Any]]:
    """Time `fn` on CUDA. Returns (event ms per call, host wall ms per call, last output per input set)."""
    k = len(input_sets)
    flush = torch.empty(max(flush_bytes // 4, 1), dtype=torch.int32, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    wall: list[float] = []
    outputs: list[Any] = [None] * k
    with torch.no_grad():
        for i in range(warmup):
            fn(*clone_values(input_sets[i % k]))
        torch.cuda.synchronize()
        for i in range(reps):
            args = clone_values(input_sets[i % k])
            flush.zero_()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            starts[i].record()
            out = fn(*args)
            ends[i].record()
            torch.cuda.synchronize()
            wall.append((time.perf_counter() - t0) * 1e3)
            if i >= reps - k:
                outputs[i % k] = out
            del args
    times = [s.elapsed_time(e) for s, e in zip(starts, ends)]
    return times, wall, outputs
