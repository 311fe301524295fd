"""How the judge's CUDA processes wait for their GPU: CUDA's default, or asleep (`KERNELGYM_CUDA_SYNC=blocking`).

By default CUDA decides per process how a host thread waits for the GPU (`cudaDeviceScheduleAuto`):
it spins while the process has fewer active threads than the host has cores. An evaluation has three
CUDA processes on one GPU (the judge's worker, the answer's recording process, the replay), and with 16
evaluations in flight on one H200 the replay processes used ~8 CPU-s each per correct evaluation (~2 with
8 in flight), the host's 16 cores ran at a load of 19-24 and throughput fell from ~55 to ~40
evaluations/min. Spinning waits were the suspect; blocking synchronisation (`CU_CTX_SCHED_BLOCKING_SYNC`,
a waiting thread sleeps on the driver) did not change it: 54.2 against 57.8 evaluations/min with 8 in
flight, 38.7 against 41.4 with 16, the replay's CPU the same (docs/BENCHMARKS.md, sixteenth session).
So CUDA's default stays; `blocking` is kept as a switch for hosts with fewer cores per GPU.

Timing is not affected either way: measurements read CUDA events, which the GPU stamps.

The flag belongs to the device's primary context and must be set before that context exists, so each
process calls `use_blocking_sync` before its first CUDA call (the fork server never touches CUDA, so
its forked candidates start without a context).

Only the standard library: the replay process and the answer's process import this before anything of
CUDA; the driver library is the one torch itself uses.
"""

from __future__ import annotations

import ctypes
import os

SYNC_VAR = "KERNELGYM_CUDA_SYNC"
_CU_CTX_SCHED_BLOCKING_SYNC = 0x04
_state: dict[int, str] = {}  # device ordinal -> what was done, once per process


def mode() -> str:
    """`auto` (CUDA's own choice, the default) or `blocking`, from the environment."""
    value = os.environ.get(SYNC_VAR, "auto").strip().lower()
    return value if value in ("blocking", "auto") else "auto"


def use_blocking_sync(ordinal: int) -> str:
    """With `KERNELGYM_CUDA_SYNC=blocking`, ask for blocking synchronisation on CUDA device `ordinal` (as this
    process numbers it) before its primary context exists. Returns what happened, for logs: never raises, since a process that cannot set
    the flag still judges correctly, only with CUDA's default way of waiting."""
    if ordinal in _state:
        return _state[ordinal]
    if mode() != "blocking":
        _state[ordinal] = f"auto ({SYNC_VAR})"
        return _state[ordinal]
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        _state[ordinal] = f"not set: no CUDA driver library ({e})"
        return _state[ordinal]
    dev = ctypes.c_int()
    rc = cuda.cuInit(0)
    if rc == 0:
        rc = cuda.cuDeviceGet(ctypes.byref(dev), ctypes.c_int(ordinal))
    if rc == 0:
        # cuda.h maps the name to its _v2 entry point since CUDA 11; older drivers export only the first
        fn = getattr(cuda, "cuDevicePrimaryCtxSetFlags_v2", None) or cuda.cuDevicePrimaryCtxSetFlags
        rc = fn(dev, ctypes.c_uint(_CU_CTX_SCHED_BLOCKING_SYNC))
    _state[ordinal] = "blocking" if rc == 0 else f"not set: CUDA driver error {rc}"
    return _state[ordinal]


def ordinal_of(device: str) -> int | None:
    """The ordinal in `cuda:N` (0 for plain `cuda`), None for other devices."""
    if device == "cuda":
        return 0
    if device.startswith("cuda:") and device[5:].isdigit():
        return int(device[5:])
    return None
