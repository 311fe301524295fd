"""`Dispatcher`: moves accepted requests from the store to a `Backend` and their outcomes back.

It keeps at most `backend.capacity()` jobs in flight, oldest request first; answers a request
from the store when an identical one already has a verdict, and parks it behind an identical
one being judged right now; re-sends a job after a retryable failure until `max_attempts`; and
fails, retryably, a job the backend never reports. It decides; the `finalize` callback it is
given writes (the store's guarded update makes each request's result the only one).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kernelgym.jobs import Job, JobOutcome
from kernelgym.judge.result import EvalResult, Status
from kernelgym.service.backend import Backend
from kernelgym.service.metrics import ServiceMetrics
from kernelgym.service.store import Store

log = logging.getLogger(__name__)

# finalize(request_id, result, worker, cached_from, created_at, eval_seconds)
Finalize = Callable[[str, dict[str, Any], str, "str | None", "float | None", "float | None"], None]


def system_error_result(task_id: str, attempts: int, why: str, retryable: bool = True) -> dict[str, Any]:
    """The result of a request the service could not judge: not the answer's fault."""
    message = (f"not judged: the job failed {attempts} time(s), the retry limit; last failure: {why}" if retryable
               else f"not judged: {why}")
    return EvalResult(status=Status.SYSTEM_ERROR, task_id=task_id, message=message, error=why,
                      fault="retries_exhausted" if retryable else "backend_error").to_dict()


@dataclass
class _Flight:
    """One job handed to the backend; its identity tells a current outcome from a stale one."""

    id: str
    key: str
    task_id: str
    attempt: int
    created_at: float  # wall clock of the submit, for request latency
    dispatched: float  # monotonic
    deadline: float  # monotonic; no outcome by then and the job counts as lost


class Dispatcher:
    """The scheduling half of `Service` (see the module docstring). Thread-safe."""

    def __init__(self, backend: Backend, store: Store, metrics: ServiceMetrics, finalize: Finalize,
                 max_attempts: int, lost_after_s: float) -> None:
        self.backend, self.store, self.metrics = backend, store, metrics
        self._finalize = finalize
        self.max_attempts = max_attempts
        self.lost_after_s = lost_after_s
        self._cv = threading.Condition()  # guards everything below
        self._queue: deque[str] = deque()
        self._inflight: dict[str, _Flight] = {}
        self._leaders: dict[str, str] = {}  # content key -> id of the request judging it now
        self._followers: dict[str, list[str]] = {}  # content key -> ids waiting for that judgement
        self._stopping = False
        self._next_reap = 0.0
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._cv:
            self._stopping = False
        self._thread = threading.Thread(target=self._loop, name="kernelgym-dispatch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop sending jobs (those in flight still report; retryable ones are left pending)."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def enqueue(self, ids: Iterable[str]) -> None:
        with self._cv:
            self._queue.extend(ids)
            self._cv.notify_all()

    def clear(self) -> None:
        """Forget all scheduling state (before a restart, which rebuilds it from the store). An
        outcome still coming from before is then stale and ignored."""
        with self._cv:
            self._queue.clear()
            self._inflight.clear()
            self._leaders.clear()
            self._followers.clear()

    def queue_depth(self) -> int:
        with self._cv:
            return len(self._queue) + sum(len(f) for f in self._followers.values())

    def in_flight(self) -> int:
        return len(self._inflight)

    def capacity(self) -> int:
        try:
            return max(0, int(self.backend.capacity()))
        except Exception:  # noqa: BLE001 - a backend restarting its workers may fail here; dispatch waits
            log.exception("backend.capacity() failed")
            return 0

    def withdraw(self, request_id: str) -> None:
        """A request is being cancelled: drop its job from the backend if not started yet (its slot
        is then free, since no outcome will come). Queued ids are skipped once no longer pending."""
        with self._cv:
            flight = self._inflight.get(request_id)
        if flight is not None and self.backend.cancel(request_id):
            with self._cv:
                if self._inflight.get(request_id) is flight:
                    self._land(flight)

    # --- the loop --------------------------------------------------------------------------------

    def _loop(self) -> None:
        while True:
            self._reap_lost()
            with self._cv:
                if self._stopping:
                    return
                if not (self._queue and len(self._inflight) < self.capacity()):
                    # Capacity can change (workers restarting), so re-check it now and then even when idle.
                    self._cv.wait(timeout=0.5)
                    continue
                request_id = self._queue.popleft()
            try:
                self._dispatch(request_id)
            except Exception:  # noqa: BLE001 - the row stays in the store; a restart resumes it
                log.exception("dispatching %s failed", request_id)

    def _dispatch(self, request_id: str) -> None:
        pending = self.store.pending_job(request_id)
        if pending is None:
            return  # cancelled (or finished) while queued
        hit = self.store.cached_result(pending.key)
        if hit is not None:
            self._finalize(request_id, hit[1], "cache", hit[0], pending.created_at, None)
            return
        with self._cv:
            if pending.key in self._leaders:  # the same judgement is running now: wait for it
                self._followers.setdefault(pending.key, []).append(request_id)
                return
            if not self.store.mark_running(request_id):
                return
            now = time.monotonic()
            limit = max(self.lost_after_s, 2 * float(pending.config.get("timeout_s") or 0))
            flight = _Flight(request_id, pending.key, pending.task_id, pending.attempts + 1, pending.created_at,
                             now, now + limit)
            self._inflight[request_id] = flight
            self._leaders[pending.key] = request_id
        job = Job(id=request_id, task_id=pending.task_id, answer=pending.answer, config=pending.config,
                  task_source=pending.task_source, attempt=flight.attempt)
        try:
            self.backend.submit(job, lambda outcome: self._on_outcome(flight, outcome))
        except Exception as e:  # noqa: BLE001 - a backend that cannot take the job is a retryable failure
            log.exception("backend.submit failed for %s", request_id)
            self._on_outcome(flight, JobOutcome(job_id=request_id, system_error=f"backend.submit failed: {e}",
                                                retryable=True))

    def _land(self, flight: _Flight) -> None:
        """Free a flight's slot and send the requests waiting on its key back to the queue (caller holds `_cv`)."""
        del self._inflight[flight.id]
        if self._leaders.get(flight.key) == flight.id:
            del self._leaders[flight.key]
            self._queue.extendleft(reversed(self._followers.pop(flight.key, [])))
        self._cv.notify_all()

    def _on_outcome(self, flight: _Flight, outcome: JobOutcome) -> None:
        """Backend callback (any thread). Only the current flight of a request may report."""
        try:
            with self._cv:
                if self._inflight.get(flight.id) is not flight or outcome.job_id != flight.id:
                    self.metrics.ignored("duplicate")
                    log.warning("ignoring a duplicate or stray outcome for %s", outcome.job_id)
                    return
                self._land(flight)
                stopping = self._stopping
            eval_s = time.monotonic() - flight.dispatched
            if outcome.result is not None:
                self._finalize(flight.id, outcome.result, outcome.worker, None, flight.created_at, eval_s)
            elif outcome.retryable and stopping:
                self.store.requeue(flight.id, refund=True)  # shutting down is not the answer's fault
            elif outcome.retryable and flight.attempt < self.max_attempts:
                if self.store.requeue(flight.id):
                    self.metrics.retried()
                    with self._cv:
                        self._queue.appendleft(flight.id)
                        self._cv.notify_all()
            else:
                why = outcome.system_error or "the backend reported a failure without a reason"
                self._finalize(flight.id, system_error_result(flight.task_id, flight.attempt, why, outcome.retryable),
                               outcome.worker, None, flight.created_at, eval_s)
        except Exception:  # noqa: BLE001 - never raise into a backend thread; a restart resumes the row
            log.exception("handling the outcome of %s failed", flight.id)

    def _reap_lost(self) -> None:
        """Fail, retryably, the jobs whose outcome is overdue: the backend broke its promise to
        report every job, and the request must still get its one result. A late outcome for such
        a job is then ignored, as any stale one is."""
        now = time.monotonic()
        if now < self._next_reap:
            return
        self._next_reap = now + min(1.0, self.lost_after_s / 4)
        with self._cv:
            lost = [f for f in self._inflight.values() if now > f.deadline]
        for flight in lost:
            log.error("no outcome for %s after %.0f s; treating the job as lost", flight.id, now - flight.dispatched)
            self.metrics.lost()
            self.backend.cancel(flight.id)
            self._on_outcome(flight, JobOutcome(job_id=flight.id, retryable=True, system_error=(
                f"the backend gave no outcome within {now - flight.dispatched:.0f} s")))
