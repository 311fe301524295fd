"""`LocalBackend`: the embedded default, one worker process per local GPU (or one CPU worker).

Each worker (`kernelgym.worker.process`) keeps torch, triton and a pool of warm candidate
processes loaded and judges up to `jobs_per_worker` jobs at once. The backend holds its own queue
and sends a job to the least-loaded live worker only when that worker has a free slot, so a
queued job can still be cancelled and a worker that is (re)starting never holds jobs. When a worker
process dies, whatever killed it, every job in flight on it gets a retryable `system_error`, what
it left running is killed, and a new worker takes its place.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from kernelgym.jobs import Job, JobOutcome, OutcomeCallback
from kernelgym.service.backend import deliver_outcomes, drain_lost, remove_queued
from kernelgym.worker.process import WorkerClient, WorkerFailed, WorkerSpec

log = logging.getLogger(__name__)

MAX_START_FAILURES = 3  # a worker that fails to start this many times in a row is given up on


@dataclass
class LocalBackendConfig:
    """Which devices get a worker and how each is run."""

    devices: tuple[str, ...] = field(default=(), metadata={"help": "e.g. ('cuda:0', 'cuda:1') or ('cpu',); "
                                                            "empty: every local GPU, else one cpu worker"})
    jobs_per_worker: int = field(default=4, metadata={"help": "evaluations in flight per worker"})
    workers_per_device: int = field(
        default=1, metadata={"help": "worker processes per device, each with jobs_per_worker evaluations in flight: "
                             "a worker's Python (inputs, reference, comparisons, messages) runs under one GIL, so "
                             "past some load a second process on the same GPU judges more than more threads in "
                             "one; measurements stay exclusive (the GPU lock is a file lock across processes)"})
    warm_pool_size: int | None = field(
        default=None, metadata={"help": "warm candidate processes per worker; 0: spawn fresh; None: two per job, "
                                "since every evaluation in flight uses up two (the answer's process and the "
                                "replay's) and a start-up takes seconds"})
    fork_server: bool = field(default=True, metadata={"help": "fork warm candidate processes from a fork server "
                                                           "with torch imported (False: a new interpreter each)"})
    judge_config: dict[str, Any] = field(default_factory=dict, metadata={"help": "JudgeConfig overrides for every job"})
    start_timeout_s: float = field(default=300.0, metadata={"help": "how long a worker may take to be ready"})

    def __post_init__(self) -> None:
        self.devices = tuple(self.devices)
        if self.warm_pool_size is None:
            self.warm_pool_size = 2 * self.jobs_per_worker
        if self.jobs_per_worker < 1 or self.warm_pool_size < 0 or self.workers_per_device < 1:
            raise ValueError("LocalBackendConfig needs jobs_per_worker >= 1, workers_per_device >= 1 and "
                             "warm_pool_size >= 0")
        bad = [d for d in self.devices if not (d == "cpu" or d.startswith("cuda:"))]
        if bad:
            raise ValueError(f"LocalBackendConfig.devices must be 'cpu' or 'cuda:N', not {bad}")


@dataclass
class _Running:
    job: Job
    on_done: OutcomeCallback


@dataclass
class _Slot:
    """One worker position on a device; the process in it is replaced when it dies."""

    device: str
    name: str = ""  # the device, with "#k" for its k-th worker when a device has several
    client: WorkerClient | None = None  # the current generation's, starting or alive
    generation: int = 0
    alive: bool = False
    starting: bool = False
    disabled: str = ""  # why this slot gave up restarting its worker
    start_failures: int = 0
    restarts: int = 0
    done: int = 0
    busy_s: float = 0.0  # wall time with at least one job in flight
    job_s: float = 0.0  # summed evaluation seconds as the worker measured them
    busy_since: float | None = None
    pool: dict[str, Any] | None = None
    running: dict[str, _Running] = field(default_factory=dict)


class LocalBackend:
    """The `Backend` protocol (`kernelgym.service.backend`) on this machine's devices."""

    def __init__(self, config: LocalBackendConfig | None = None) -> None:
        self.config = config or LocalBackendConfig()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._slots: list[_Slot] = []
        self._queue: deque[tuple[Job, OutcomeCallback]] = deque()
        self._started = False
        self._stopping = False

    # -- Backend protocol ------------------------------------------------------------------------

    def start(self) -> None:
        """Start one worker per device and wait until each is ready or gave up. Raises RuntimeError
        when none can start."""
        with self._lock:
            if self._started:
                return
            self._started = True
            k = self.config.workers_per_device
            self._slots = [_Slot(device=d, name=d if k == 1 else f"{d}#{i}")
                           for d in (self.config.devices or _local_devices()) for i in range(k)]
            for slot in self._slots:
                self._launch(slot)
            self._changed.wait_for(lambda: all(s.alive or s.disabled for s in self._slots))
            failed = self._slots[0].disabled if all(s.disabled for s in self._slots) else ""
        if failed:
            self.shutdown()
            raise RuntimeError(f"no local worker could start: {failed}")

    def capacity(self) -> int:
        """Workers x jobs per worker, counting workers that are restarting."""
        with self._lock:
            return sum(self.config.jobs_per_worker for s in self._slots if not s.disabled)

    def submit(self, job: Job, on_done: OutcomeCallback) -> None:
        """Queue `job`; it runs on the least-loaded live worker as soon as one has a free slot."""
        refused: JobOutcome | None = None
        with self._lock:
            if not self._started:
                raise RuntimeError("LocalBackend.submit before start()")
            if self._stopping:
                refused = JobOutcome(job_id=job.id, system_error="the local backend is shut down", retryable=True)
            elif all(s.disabled for s in self._slots):
                why = self._slots[0].disabled
                refused = JobOutcome(job_id=job.id, system_error=f"no local worker can start: {why}")
            else:
                self._queue.append((job, on_done))
                sends = self._dispatch()
        if refused is not None:
            deliver_outcomes([(on_done, refused)])
        else:
            _send_all(sends)

    def wait_warm(self, timeout_s: float = 300.0) -> bool:
        """Wait until every running worker has reported its warm pool full (at once when there is
        no pool); False on timeout. A service works before that, only slower: its first jobs wait
        for candidate processes. Benchmarks wait, to measure the steady state."""
        def warm() -> bool:
            return all(s.pool is not None and s.pool.get("ready", 0) >= s.pool.get("size", 0)
                       for s in self._slots if s.alive)
        if not self.config.warm_pool_size:
            return True
        with self._lock:
            return self._changed.wait_for(warm, timeout_s)

    def cancel(self, job_id: str) -> bool:
        """Drops a job still in this backend's queue; one already sent to a worker runs to the end."""
        with self._lock:
            return remove_queued(self._queue, job_id)

    def stats(self) -> dict[str, Any]:
        """Workers (alive, pid, restarts, in flight, done, warm pool), the queue, and per device
        `busy_s`: wall seconds with at least one job in flight (`job_s` sums the jobs' own seconds)."""
        now = time.monotonic()
        with self._lock:
            workers = [{"name": s.name, "device": s.device, "alive": s.alive, "disabled": s.disabled,
                        "pid": s.client.pid if s.client is not None and s.alive else None,
                        "in_flight": len(s.running), "done": s.done, "restarts": s.restarts,
                        "busy_s": round(_busy(s, now), 3), "job_s": round(s.job_s, 3), "pool": s.pool}
                       for s in self._slots]
            queued = len(self._queue)
        return {"backend": "local", "workers_alive": sum(w["alive"] for w in workers),
                "restarts": sum(w["restarts"] for w in workers),
                "capacity": self.config.jobs_per_worker * sum(not w["disabled"] for w in workers),
                "in_flight": sum(w["in_flight"] for w in workers), "queued": queued,
                "busy_seconds": {w["name"]: w["busy_s"] for w in workers}, "workers": workers}

    def shutdown(self) -> None:
        """Stop the workers; queued and in-flight jobs get a retryable outcome. Idempotent."""
        with self._lock:
            if not self._started or self._stopping:
                return
            self._stopping = True
            lost = drain_lost(self._queue, self._slots)
            clients = [(s.client, s.alive) for s in self._slots if s.client is not None]
            self._changed.notify_all()
        deliver_outcomes([(cb, JobOutcome(job_id=job.id, system_error="the local backend shut down", retryable=True))
                  for cb, job in lost])
        stoppers = []
        for client, alive in clients:
            if alive:  # in parallel: each worker takes a moment to kill its candidates
                stoppers.append(threading.Thread(target=client.stop, daemon=True))
                stoppers[-1].start()
            else:
                client.kill()  # still starting: its start fails and its thread ends
        for stopper in stoppers:
            stopper.join()
        with self._changed:
            self._changed.wait_for(lambda: not any(s.starting for s in self._slots), timeout=30)

    # -- workers ---------------------------------------------------------------------------------

    def _launch(self, slot: _Slot, delay_s: float = 0.0) -> None:
        """Start a new generation of worker for `slot` on a thread of its own (start-up takes
        seconds). Under the lock. Callbacks of older generations are ignored from here on."""
        slot.generation += 1
        slot.starting, slot.alive, slot.client, slot.pool = True, False, None, None
        threading.Thread(target=self._start_worker, args=(slot, slot.generation, delay_s), daemon=True,
                         name=f"local-backend-start-{slot.name}").start()

    def _start_worker(self, slot: _Slot, gen: int, delay_s: float) -> None:
        spec = WorkerSpec(slot.device, self.config.jobs_per_worker, self.config.warm_pool_size,
                          dict(self.config.judge_config), fork_server=self.config.fork_server)
        client = WorkerClient(spec, on_message=lambda msg: self._on_message(slot, gen, msg),
                              on_exit=lambda why: self._on_exit(slot, gen, client, why))
        with self._changed:
            if delay_s:  # after a failed start: a device that cannot start a worker is not hammered
                self._changed.wait_for(lambda: self._stopping, delay_s)
            if self._stopping:
                slot.starting = False
                self._changed.notify_all()
                return
            slot.client = client  # so that shutdown can kill it while it starts
        try:
            client.start(self.config.start_timeout_s)
        except WorkerFailed as e:
            self._start_failed(slot, gen, str(e))
            return
        with self._lock:
            current = slot.generation == gen and not self._stopping
            if slot.generation == gen:
                slot.starting = False
            if current:
                slot.alive, slot.start_failures = True, 0
                log.info("local backend: worker %s ready (pid %d)", slot.name, client.pid)
                sends = self._dispatch()
            self._changed.notify_all()
        if current:
            _send_all(sends)
        else:  # shut down meanwhile, or it died at once and its successor is already starting
            client.stop()

    def _start_failed(self, slot: _Slot, gen: int, why: str) -> None:
        lost: list[tuple[OutcomeCallback, JobOutcome]] = []
        with self._lock:
            if slot.generation != gen:
                return
            slot.starting, slot.client = False, None
            slot.start_failures += 1
            if not self._stopping:
                log.error("local backend: worker %s failed to start (%d in a row): %s", slot.name,
                          slot.start_failures, why)
                if slot.start_failures >= MAX_START_FAILURES:
                    slot.disabled = why
                    if all(s.disabled for s in self._slots):
                        lost = [(cb, JobOutcome(job_id=job.id, system_error=f"no local worker can start: {why}"))
                                for job, cb in self._queue]
                        self._queue.clear()
                else:
                    self._launch(slot, delay_s=2.0 ** slot.start_failures)
            self._changed.notify_all()
        deliver_outcomes(lost)

    def _on_message(self, slot: _Slot, gen: int, msg: dict[str, Any]) -> None:
        if msg.get("op") == "pool":
            with self._lock:
                if slot.generation == gen:
                    slot.pool = msg.get("pool")
                    self._changed.notify_all()
            return
        if msg.get("op") != "outcome":
            return
        outcome = JobOutcome(**msg["outcome"])
        with self._lock:
            running = slot.running.pop(outcome.job_id, None) if slot.generation == gen else None
            if running is None:
                return  # already reported (shut down)
            slot.done += 1
            slot.job_s += float(msg.get("seconds", 0.0))
            slot.pool = msg.get("pool")
            self._settle_busy(slot)
            sends = self._dispatch()
        deliver_outcomes([(running.on_done, outcome)])
        _send_all(sends)

    def _on_exit(self, slot: _Slot, gen: int, client: WorkerClient, why: str) -> None:
        with self._lock:
            if slot.generation != gen:
                return
            lost = [(r.on_done, JobOutcome(job_id=r.job.id, system_error=f"worker {slot.name} (pid {client.pid}) "
                                           f"died: {why}", retryable=True, worker=slot.name))
                    for r in slot.running.values()]
            slot.running.clear()
            self._settle_busy(slot)
            if self._stopping:
                slot.alive, slot.client = False, None
            else:
                log.warning("local backend: worker %s (pid %d) died (%s) with %d job(s) in flight; restarting",
                            slot.name, client.pid, why, len(lost))
                slot.restarts += 1
                self._launch(slot)
            self._changed.notify_all()
        deliver_outcomes(lost)

    def _dispatch(self) -> list[tuple[WorkerClient, Job]]:
        """Assign queued jobs to the least-loaded live workers with a free slot. Under the lock;
        returns the sends to make once it is released (a send may block on a busy socket)."""
        sends = []
        while self._queue:
            free = [s for s in self._slots if s.alive and len(s.running) < self.config.jobs_per_worker]
            if not free:
                break
            slot = min(free, key=lambda s: len(s.running))
            job, on_done = self._queue.popleft()
            if not slot.running:
                slot.busy_since = time.monotonic()
            slot.running[job.id] = _Running(job, on_done)
            sends.append((slot.client, job))
        return sends

    @staticmethod
    def _settle_busy(slot: _Slot) -> None:
        if not slot.running and slot.busy_since is not None:
            slot.busy_s += time.monotonic() - slot.busy_since
            slot.busy_since = None


def _busy(slot: _Slot, now: float) -> float:
    return slot.busy_s + (now - slot.busy_since if slot.busy_since is not None else 0.0)


def _local_devices() -> list[str]:
    """`cuda:0` ... `cuda:N-1` for the GPUs torch sees here, or `cpu` when there are none."""
    import torch

    n = torch.cuda.device_count()
    return [f"cuda:{i}" for i in range(n)] if n else ["cpu"]


def _send_all(sends: list[tuple[WorkerClient, Job]]) -> None:
    for client, job in sends:
        client.send_job(job)  # a dead worker reports through on_exit, which fails the job as retryable

