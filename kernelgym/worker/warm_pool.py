"""`WarmPool`: candidate processes started ahead of time, so an evaluation skips the child's start-up.

A fresh child imports torch and triton and (on a GPU) creates a CUDA context before it can load an
answer: about 2 s on CPU, about 7 s on an H100 machine. The pool keeps `size` children per device
that have done exactly that and nothing else (`kernelgym.judge.child._warm_up`), each in its own
scratch dir with its own RH-27 marker. Isolation is unchanged: a process is handed to one
evaluation, which kills it when done; the pool only ever starts new ones to replace it.

Registered with `kernelgym.judge.sandbox`, the pool serves `CandidateProcess.start` for its device
in this process; when it has none ready, the judge spawns a fresh child exactly as without a pool.

By default the pool forks its processes from a fork server of its own
(`kernelgym.judge.forkserver`: torch and triton imported once), so a process costs a fork and its
CUDA context instead of an interpreter start and the imports; where the server cannot start, the
pool starts processes with `python -m kernelgym.judge.child` as before.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernelgym.judge.forkserver import ForkServer, ForkServerFailed
from kernelgym.judge.sandbox import CandidateProcess, ChildFailed, has_source, register_source, unregister_source
from kernelgym.worker.triton_seed import TritonSeed, seeding_enabled

log = logging.getLogger(__name__)

_MAX_BACKOFF_S = 10.0  # start-ups that fail under load (GPU memory taken by running evaluations) recover


class WarmPool:
    """Keeps up to `size` ready candidate processes for `device` (`cpu`, `cuda:N`)."""

    def __init__(self, device: str, size: int, startup_timeout_s: float = 300.0,
                 scratch_root: Path | None = None, fork_server: bool = True) -> None:
        """`scratch_root`: where the processes' scratch dirs go; by default a temporary dir of the
        pool's own, removed on close. A worker passes one its parent removes even if it is killed.
        `fork_server`: fork processes from a fork server (False: start each as a new interpreter)."""
        if size < 1:
            raise ValueError("WarmPool.size must be >= 1")
        self.device, self.size, self.startup_timeout_s = device, size, startup_timeout_s
        self._own_root = scratch_root is None
        self.scratch_root = scratch_root or Path(tempfile.mkdtemp(prefix="kernelgym-warm-pool-"))
        self._ready: collections.deque[CandidateProcess] = collections.deque()
        self._starting = 0
        self._starting_procs: dict[CandidateProcess, threading.Thread] = {}
        self._waiting = 0  # callers of `take` waiting for a starting process
        self._cond = threading.Condition()
        self._closed = False
        self._filler: threading.Thread | None = None
        self._use_fork_server = fork_server
        self._forkserver: ForkServer | None = None
        self._fork_server_starts = 0
        self._failures_in_a_row = 0
        self._counts = {"handed_out": 0, "misses": 0, "spawned": 0, "spawn_failures": 0, "died_idle": 0}
        self._startup_seconds: collections.deque[float] = collections.deque(maxlen=20)
        # the first warm process's Triton cache, copied into later ones (GPUs; KERNELGYM_TRITON_SEED=0 turns it off)
        self._seed = TritonSeed(self.scratch_root) if seeding_enabled(device) else None

    def __enter__(self) -> "WarmPool":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Begin filling in the background and serve this process's evaluations on the device (idempotent)."""
        with self._cond:
            if self._filler is not None or self._closed:
                return
            self._filler = threading.Thread(target=self._fill, name=f"warm-pool-{self.device}", daemon=True)
            self._filler.start()
        register_source(self.device, self)

    def take(self, deadline: float, max_log_bytes: int, max_message_bytes: int,
             cpu_memory_bytes: int = 0) -> CandidateProcess | None:
        """A ready process assigned these limits, removed from the pool for good; None when none is
        ready nor about to be (the caller spawns a fresh one). When one is starting and no other
        caller waits for it, waiting costs less than a fresh start (which would also compete with it
        for the CPU): that wait is added to `deadline`, so the time limit counts from the hand-out."""
        asked = time.monotonic()
        while True:
            with self._cond:
                # With none ready, all `size` are starting or about to, unless start-ups keep failing
                # (then only those already starting are worth the wait).
                expect = self._starting if self._failures_in_a_row else self.size
                if not self._ready and self._waiting < expect and not self._closed:
                    self._waiting += 1
                    try:
                        self._cond.wait_for(lambda: self._ready or self._closed, self._expected_startup_s())
                    finally:
                        self._waiting -= 1
                if not self._ready:
                    self._counts["misses"] += 1
                    return None
                proc = self._ready.popleft()
                self._cond.notify_all()  # the filler starts a replacement
            if proc.proc.poll() is not None:  # died while idle (killed from outside): never hand it out
                proc.close()
                with self._cond:
                    self._counts["died_idle"] += 1
                continue
            try:
                proc.assign(deadline + time.monotonic() - asked, max_log_bytes, max_message_bytes, cpu_memory_bytes)
            except OSError as e:
                log.warning("warm %s process %d could not be assigned (%s); trying another", self.device,
                            proc.proc.pid, e)
                proc.close()
                continue
            with self._cond:
                self._counts["handed_out"] += 1
            return proc

    def wait_ready(self, count: int | None = None, timeout: float = 120.0) -> bool:
        """Wait until `count` (default: all `size`) processes are ready; False on timeout or close."""
        want = self.size if count is None else min(count, self.size)
        with self._cond:
            return self._cond.wait_for(lambda: self._closed or len(self._ready) >= want, timeout) and not self._closed

    def stats(self) -> dict[str, Any]:
        """Ready/starting processes, hand-outs, misses (fresh spawns instead), failures, mean start-up seconds."""
        with self._cond:
            startup = self._startup_seconds
            return {"device": self.device, "size": self.size, "ready": len(self._ready), "starting": self._starting,
                    "fork_server": self._forkserver.pid if self._forkserver is not None else None,
                    "triton_seed": self._seed is not None and self._seed.ready, **self._counts, "mean_startup_s": round(sum(startup) / len(startup), 3) if startup else None}

    def _expected_startup_s(self) -> float:
        """How long a start-up takes here (recent mean); before any has finished, a generous guess."""
        recent = self._startup_seconds
        return 1.5 * sum(recent) / len(recent) if recent else 30.0

    def close(self) -> None:
        """Stop serving the device, stop refilling and kill every process not handed out."""
        unregister_source(self.device, self)
        with self._cond:
            self._closed = True
            idle, self._ready = list(self._ready), collections.deque()
            starting = dict(self._starting_procs)
            self._cond.notify_all()
        for proc in idle:
            proc.close()
        for proc in starting:
            proc.kill()  # its start-up fails at once, and its thread closes it
        if self._filler is not None and self._filler is not threading.current_thread():
            self._filler.join(timeout=5)
        for thread in starting.values():
            thread.join(timeout=5)
        if self._own_root:
            shutil.rmtree(self.scratch_root, ignore_errors=True)

    def _fill(self) -> None:
        try:
            self._fill_until_closed()
        finally:  # the filler is the fork server's only user: it stops it on its way out
            if self._forkserver is not None:
                self._forkserver.close()

    def _fill_until_closed(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._closed or len(self._ready) + self._starting < self.size)
                if self._closed:
                    return
                backoff = min(_MAX_BACKOFF_S, 0.5 * 2 ** self._failures_in_a_row) if self._failures_in_a_row else 0.0
            if backoff:
                # A device that cannot start children (driver gone, disk full) must not be hammered.
                with self._cond:
                    self._cond.wait_for(lambda: self._closed, backoff)
                    if self._closed:
                        return
            try:
                proc = CandidateProcess.prespawn(self.device, self.startup_timeout_s, self.scratch_root,
                                                 forkserver=self._fork_server(),
                                                 prepare=self._seed.plant if self._seed is not None else None)
            except OSError as e:
                log.warning("warm %s process could not be spawned: %s", self.device, e)
                with self._cond:
                    self._failures_in_a_row += 1
                    self._counts["spawn_failures"] += 1
                continue
            waiter = threading.Thread(target=self._await_ready, args=(proc,), daemon=True,
                                      name=f"warm-start-{self.device}-{proc.proc.pid}")
            with self._cond:
                late = self._closed  # closed while it was being spawned: close() did not see it
                if not late:
                    self._starting += 1
                    self._counts["spawned"] += 1
                    self._starting_procs[proc] = waiter
            if late:
                proc.close()
                return
            waiter.start()

    def _fork_server(self) -> ForkServer | None:
        """The running fork server, (re)started when needed; None: start processes the plain way.
        A server that died is restarted at most twice: a third death means forking is broken here."""
        if not self._use_fork_server:
            return None
        if self._forkserver is not None and self._forkserver.alive():
            return self._forkserver
        if self._forkserver is not None:
            log.warning("fork server %d for %s died", self._forkserver.pid, self.device)
            self._forkserver.close()
            self._forkserver = None
        if self._fork_server_starts >= 3:
            return None
        self._fork_server_starts += 1
        scratch = Path(tempfile.mkdtemp(prefix="kernelgym-forkserver-", dir=self.scratch_root))
        try:
            self._forkserver = ForkServer(self.device, scratch, self.startup_timeout_s)
        except (OSError, ForkServerFailed) as e:
            log.warning("no fork server for %s (%s): starting candidate processes as new interpreters", self.device, e)
            self._use_fork_server = False
        return self._forkserver

    def _await_ready(self, proc: CandidateProcess) -> None:
        try:
            proc.wait_ready()
            ok = True
        except ChildFailed as e:
            if not self._closed:
                log.warning("warm %s process %d failed to start: %s", self.device, proc.proc.pid, e.message)
            ok = False
        if ok and self._seed is not None and not self._seed.ready:
            # Ready and never handed out: only trusted start-up code has written its cache.
            self._seed.harvest(proc.scratch)
        with self._cond:
            self._starting -= 1
            self._starting_procs.pop(proc, None)
            keep = ok and not self._closed
            if keep:
                self._ready.append(proc)
                self._startup_seconds.append(time.monotonic() - proc.spawned_at)
                self._failures_in_a_row = 0
            elif not ok and not self._closed:
                self._failures_in_a_row += 1
                self._counts["spawn_failures"] += 1
            self._cond.notify_all()
        if not keep:
            proc.close()


@contextlib.contextmanager
def batch_pool(device: str, jobs: int, enabled: bool = True) -> Iterator[WarmPool | None]:
    """A warm pool for a long batch of evaluations on the CPU (the corpus builder, `kernelgym run` and
    `redteam`, the red-team tests): two processes per
    evaluation in flight, forked from a fork server, so each evaluation's answer and replay processes
    skip the interpreter start and the torch and triton imports. None (fresh spawns, as before) off the
    CPU, when `enabled` is false, or when this process already serves the device from a pool."""
    if not enabled or device != "cpu" or has_source(device):
        yield None
        return
    with WarmPool(device, max(2, 2 * jobs)) as pool:
        yield pool
