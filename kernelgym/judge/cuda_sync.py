"""How the judge's CUDA processes wait for their GPU: asleep, not spinning (issue 26's throughput).

By default CUDA decides per process how a host thread waits for the GPU (`cudaDeviceScheduleAuto`):
it spins while the process has fewer active threads than the host has cores. An evaluation has three
CUDA processes on one GPU (the judge's worker, the answer's recording process, the replay), so eight
in flight are ~17 contexts that the GPU time-slices, and each process's waits grow with its neighbours'
work; spinning through them, the replay processes of one H200 burned 7.4 CPU-s each per correct
evaluation with 16 in flight (1.3 with 8), the host's 16 cores ran at a load of 15-20, and throughput
fell from 52 to 28-38 evaluations/min (docs/BENCHMARKS.md, sixteenth session). Blocking
synchronisation (`CU_CTX_SCHED_BLOCKING_SYNC`) puts a waiting thread to sleep on the driver instead.

Timing is not affected: measurements read CUDA events, which the GPU stamps, not host clocks.

The flag belongs to the device's primary context and must be set before that context exists, so each
process calls `use_blocking_sync` before its first CUDA call (the fork server never touches CUDA, so
its forked candidates start without a context). `KERNELGYM_CUDA_SYNC=auto` leaves CUDA's default.

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
    """`blocking` (the default) or `auto` (CUDA's own choice), from the environment."""
    value = os.environ.get(SYNC_VAR, "blocking").strip().lower()
    return value if value in ("blocking", "auto") else "blocking"


def use_blocking_sync(ordinal: int) -> str:
    """Ask for blocking synchronisation on CUDA device `ordinal` (as this process numbers it) before its
    primary context exists. Returns what happened, for logs: never raises, since a process that cannot set
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
