"""Honest GPU timing, shared by the trusted reference side and the candidate child.

CUDA events around each call, a device-wide synchronize before reading them (work left on other
streams is waited for), L2 flushed before every call (and the call enqueued while the flush runs,
so launch latency is not timed), warm-up excluded, fresh input storage per call, `torch.no_grad()`.
A measurement has its GPU to itself (`gpu_lock`).
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

from kernelgym.judge.inputs import clone_values, varied_copy
from kernelgym.judge.spot import SpotReservoir

@contextlib.contextmanager
def gpu_lock(device: str, exclusive: bool) -> Iterator["GpuHold | None"]:
    """A per-GPU readers-writer lock across threads and processes of this machine.

    Work that runs kernels (correctness trials, reference outputs) holds it shared; a timing or
    profiling measurement holds it exclusive, so nothing else of ours runs on that GPU while it is
    measured. Writers have priority through a turnstile: readers pass it before taking their share,
    a writer holds it while it waits and measures, so a stream of trials cannot starve timing.
    Every acquisition opens its own descriptors, which makes `flock` exclude threads too.
    Yields the `GpuHold` (None on the CPU, where nothing is locked).
    """
    if torch.device(device).type != "cuda":
        yield None
        return
    key = _gpu_key(device)
    held = getattr(_HELD, key, None)
    if held is not None:
        # Shared work nested in shared work of the same thread runs under the outer share; taking
        # it again could deadlock behind a writer queued in between.
        if exclusive:
            raise RuntimeError("a measurement cannot be nested in work holding the same GPU shared")
        yield held
        return
    with file_rw_lock(os.path.join(tempfile.gettempdir(), f"kernelgym-gpu-{key}"), exclusive) as hold:
        start = time.time()
        if not exclusive:
            setattr(_HELD, key, hold)
        try:
            yield hold
        finally:
            if not exclusive:
                delattr(_HELD, key)
            _log_busy(start, time.time(), "x" if exclusive else "s")


_gpu_sleep = torch.cuda._sleep  # bound at import, before any answer could replace it
_LAUNCH_SLACK_CYCLES = 400_000  # ~0.2 ms at an H100's clock
_GPU_KEYS: dict[int, str] = {}
_HELD = threading.local()  # per thread: GPU key -> the shared hold it is inside


def _gpu_key(device: str) -> str:
    """The physical GPU behind `device`: its UUID, so processes that see different
    CUDA_VISIBLE_DEVICES (Ray actors, per-GPU workers) still share one lock per real GPU."""
    index = torch.device(device).index
    index = torch.cuda.current_device() if index is None else index
    if index not in _GPU_KEYS:
        uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
        _GPU_KEYS[index] = str(uuid) if uuid else str(index)
    return _GPU_KEYS[index]


BUSY_LOG_VAR = "KERNELGYM_BUSY_LOG"


def _log_busy(start: float, end: float, kind: str) -> None:
    """With KERNELGYM_BUSY_LOG set, append each hold as `start end kind` (`x`: a measurement,
    `s`: shared kernel work): `kernelgym bench service` computes the GPU's timing-busy share (and
    its share held at all) from it. One short O_APPEND write per hold, so holders in several
    processes never interleave lines."""
    path = os.environ.get(BUSY_LOG_VAR)
    if not path:
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, f"{start:.6f} {end:.6f} {kind}\n".encode())
        finally:
            os.close(fd)
    except OSError:
        pass


class GpuHold:
    """One holder's side of `file_rw_lock`. A reader whose work runs long (a candidate's trial
    that hangs, spins or is just slow) can `step_aside` so a waiting measurement is not held up
    by it: without this, one answer stuck in `forward` blocked every measurement on its GPU until
    its timeout (30 s of a 90 s benchmark; 300 s with the default timeout)."""

    def __init__(self, base: str, gate: Any, main: Any) -> None:
        self._base, self._gate, self._main = base, gate, main

    def writer_waiting(self) -> bool:
        """Someone is in the turnstile: a measurement waiting for the readers (or, for an instant,
        a reader passing through; stepping aside for it costs a few milliseconds)."""
        with open(self._base + ".turnstile", "a") as probe:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(probe, fcntl.LOCK_UN)
            return False

    def step_aside(self) -> None:
        """Give up this reader's share, wait for the queued measurements to pass, take it back."""
        fcntl.flock(self._main, fcntl.LOCK_UN)
        fcntl.flock(self._gate, fcntl.LOCK_EX)
        fcntl.flock(self._gate, fcntl.LOCK_UN)
        fcntl.flock(self._main, fcntl.LOCK_SH)


@contextlib.contextmanager
def file_rw_lock(base: str, exclusive: bool) -> Iterator[GpuHold]:
    """The lock behind `gpu_lock`, on the files `base`.turnstile and `base`.lock."""
    with open(base + ".turnstile", "a") as gate, open(base + ".lock", "a") as main:
        fcntl.flock(gate, fcntl.LOCK_EX)
        try:
            if not exclusive:
                fcntl.flock(gate, fcntl.LOCK_UN)
            fcntl.flock(main, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            yield GpuHold(base, gate, main)
        finally:
            fcntl.flock(main, fcntl.LOCK_UN)
            fcntl.flock(gate, fcntl.LOCK_UN)


def timing_lock(device: str) -> contextlib.AbstractContextManager[None]:
    """The exclusive side of `gpu_lock`: one measurement on a GPU, nothing else of ours beside it."""
    return gpu_lock(device, exclusive=True)


def time_calls(
    fn: Callable[..., Any],
    input_sets: list[list[Any]],
    warmup: int,
    reps: int,
    flush_bytes: int,
    budget_s: float = 0.0,
    *args: Any,
    device: str | torch.device | None = None,
    **kwargs: Any,
) -> tuple[list[float], list[float], list[Any]]:
    """`_time_calls` (below) with `device` as the current CUDA device: the events, the L2 flush and the
    synchronizes go to the GPU the work runs on. The current device is per host thread, and a new
    thread starts on GPU 0: a worker judging on cuda:3 from its thread pool timed the reference's
    kernels on cuda:3 between events recorded on GPU 0's idle stream, ~2.9 us whatever the task
    (the thirteenth session's RL, judged on GPUs 2 and 3: no answer could be faster than that).
    """
    with contextlib.nullcontext() if device is None else torch.cuda.device(device):
        return _time_calls(fn, input_sets, warmup, reps, flush_bytes, budget_s, *args, **kwargs)


def _time_calls(
    fn: Callable[..., Any],
    input_sets: list[list[Any]],
    warmup: int,
    reps: int,
    flush_bytes: int,
    budget_s: float = 0.0,
    max_reps: int = 10_000,
    after_call: Callable[[Any], None] | None = None,
    hold: Callable[[Any], Any] | None = None,
    spots: SpotReservoir | None = None,
    kept: dict[int, Any] | None = None,
    before_call: Callable[[list[Any]], None] | None = None,
    costs: dict[str, float] | None = None,
) -> tuple[list[float], list[float], list[Any]]:
    """Time `fn` on CUDA. Returns (event ms per call, host wall ms per call, last output per input set).

    At least `reps` timed calls, more while the measurement has run for less than `budget_s`
    (at most `max_reps`): short kernels get hundreds of samples, so their median repeats between
    evaluations. Calls cycle over `input_sets`; every call but the last one per set gets its
    values scaled by a call-specific factor (`varied_copy`), so no call repeats another's values.
    The last call per set runs on the set as given and its output is returned for validation.
    `after_call(out)` runs after every call (warm-up included) before anything else touches its
    output: the candidate's guard against outputs and torch modes that run code later (it raises).
    `hold(out)` is what is kept of an output that is checked later (the last one per set, the spot
    calls'), taken right after `after_call`, before `fn` runs again: the child's host copy, so
    that no later call (the profile's warm-up, say) can repair on the device an output it
    skimped on. `spots` is offered every varied call (numbered from 0 with the warm-up calls) and
    keeps a secret uniform sample of them; `kept[call]` gets the held output of each call it kept,
    for the judge's spot checks: an answer that does part of the work on calls it guesses are not
    checked is caught there (RH-21). With `before_call(args)` (the replay's buffer set-up), each
    call's arguments go to it, untimed, and `fn()` is called with none.
    """
    on = {t.device.index for s in input_sets for t in s if isinstance(t, torch.Tensor) and t.is_cuda}
    if on and on != {torch.cuda.current_device()}:  # events on one GPU around work on another time nothing
        raise RuntimeError(f"timing on cuda:{torch.cuda.current_device()} while the inputs are on "
                           f"{', '.join(f'cuda:{i}' for i in sorted(on))}: pass time_calls(device=)")
    check = after_call or (lambda out: None)
    costs = {} if costs is None else costs  # host seconds by part, for the judge's phase table
    for part in ("vary", "prepare", "timed", "hold"):
        costs.setdefault(part, 0.0)

    def held(out: Any) -> Any:
        t = time.perf_counter()
        try:
            return (hold or (lambda o: o))(out)
        finally:
            costs["hold"] += time.perf_counter() - t

    def varied(args: list[Any], call: int) -> list[Any]:
        t = time.perf_counter()
        try:
            return varied_copy(args, call)
        finally:
            costs["vary"] += time.perf_counter() - t
    slots: list[tuple[int, Any]] = []  # (call, held output) per reservoir slot
    k = len(input_sets)
    flush = torch.empty(max(flush_bytes // 4, 1), dtype=torch.int32, device="cuda")
    events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
    wall: list[float] = []
    outputs: list[Any] = [None] * k

    def invoke(args: list[Any]) -> Any:
        if before_call is None:
            return fn(*args)
        return fn()

    def timed(call: int, args: list[Any]) -> Any:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t_prep = time.perf_counter()
        if before_call is not None:
            before_call(args)
        torch.cuda.synchronize()  # the GPU is idle: nothing queued before the call is timed
        t0 = time.perf_counter()
        costs["prepare"] += t0 - t_prep
        # The L2 flush and a short spin (~0.3 ms of GPU work together) run while the CPU enqueues
        # the call, so its launch latency is not timed, as in triton.testing.do_bench. Measured
        # on the H100 without the spin: the answer's Python launch path (its wrapper, Triton's
        # launcher, our launch recorder) often outlasted the bare flush, and medians of ~0.2 ms
        # kernels moved by 5-50 % between evaluations with the CPU's load. Host work that needs
        # the inputs waits for the spin, so it is still timed.
        flush.zero_()
        _gpu_sleep(_LAUNCH_SLACK_CYCLES)
        start.record()
        out = invoke(args)
        end.record()
        torch.cuda.synchronize()
        check(out)
        wall.append((time.perf_counter() - t0) * 1e3)
        costs["timed"] += wall[-1] / 1e3
        events.append((start, end))
        return out

    with torch.no_grad():
        for i in range(warmup):
            if before_call is not None:
                before_call(varied_copy(input_sets[i % k], i))
            check(invoke([]) if before_call is not None else fn(*varied_copy(input_sets[i % k], i)))
        torch.cuda.synchronize()
        began = time.perf_counter()
        call = warmup
        # Varied calls until the minimum is met and the budget spent, then one exact call per set.
        while call - warmup < max(reps, k) - k or (time.perf_counter() - began < budget_s
                                                    and call - warmup < max_reps - k):
            out = timed(call, varied(input_sets[call % k], call))
            slot = spots.offer(call) if spots is not None else None
            if slot is not None:
                entry = (call, held(out))
                if slot < len(slots):
                    slots[slot] = entry
                else:
                    slots.append(entry)
            del out
            call += 1
        for j in range(k):
            outputs[(call + j) % k] = held(timed(call + j, clone_values(input_sets[(call + j) % k])))
    if kept is not None:
        kept.update(dict(slots))
    times = [s.elapsed_time(e) for s, e in events]
    return times, wall, outputs
