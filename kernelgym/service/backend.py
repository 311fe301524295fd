"""The protocol between the service and its backends, and the bookkeeping backends share.

A backend (local worker processes, Ray actors) only evaluates jobs; queueing, the result store,
retries and exactly-once delivery belong to `kernelgym.service.service`. A backend reports every
submitted job exactly once through the callback: a result, or a system failure (the worker died,
the actor was lost) that the service may retry.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from kernelgym.jobs import Job, JobOutcome, OutcomeCallback

log = logging.getLogger(__name__)


class Backend(Protocol):
    """Evaluates jobs on some set of devices. Thread-safe; `submit` never blocks on judging."""

    def start(self) -> None:
        """Start workers (idempotent). May take seconds (warm processes import torch)."""

    def capacity(self) -> int:
        """How many jobs may be in flight at once; the service keeps at most this many submitted."""

    def submit(self, job: Job, on_done: OutcomeCallback) -> None:
        """Queue one job; `on_done` is called exactly once, from any thread, with its outcome."""

    def cancel(self, job_id: str) -> bool:
        """Best effort: drop a job not yet started (then `on_done` is NOT called). True if dropped."""

    def stats(self) -> dict[str, Any]:
        """Numbers for /metrics and /health: workers alive, per-device busy seconds, restarts, ..."""

    def shutdown(self) -> None:
        """Stop workers; jobs still in flight get a retryable system-error outcome."""


# The bookkeeping every backend shares: a queue of (job, on_done) not yet sent to a worker, and
# per worker a `running` dict of records with `.job` and `.on_done`.
QueueItem = tuple[Job, OutcomeCallback]


def remove_queued(queue: Any, job_id: str) -> bool:
    """Drop `job_id` from a backend's queue (call under the backend's lock); True if it was there."""
    for item in queue:
        if item[0].id == job_id:
            queue.remove(item)
            return True
    return False


def drain_lost(queue: Any, slots: Any) -> list[tuple[OutcomeCallback, Job]]:
    """Empty the queue and every slot's `running` (under the backend's lock): the jobs that must
    now get a retryable outcome because the backend is going away."""
    lost = [(cb, job) for job, cb in queue]
    queue.clear()
    for slot in slots:
        lost += [(r.on_done, r.job) for r in slot.running.values()]
        slot.running.clear()
    return lost


def deliver_outcomes(outcomes: list[tuple[OutcomeCallback, JobOutcome]]) -> None:
    """Call each callback outside the backend's lock (it may submit again); one that raises loses
    nothing else."""
    for on_done, outcome in outcomes:
        try:
            on_done(outcome)
        except Exception:
            log.exception("outcome callback for job %s raised", outcome.job_id)
