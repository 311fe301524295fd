"""`Service`: the plain-Python judging service that the HTTP API (and tests) drive.

Contract: `submit` persists a batch before it returns, and every accepted request then gets
exactly one final state: `done` with one `EvalResult`, or `cancelled`. The store's guarded
updates make it exactly one; the `Dispatcher` (`kernelgym.service.dispatch`) decides what to run
and when; this class admits requests, delivers results to waiters and streams, and on `start`
queues again what a previous process left pending or running (a request that was running when
the process died has spent that attempt).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import Any

from kernelgym.judge.result import EvalResult
from kernelgym.service.admission import EvalRequest, Limits, Submission, TaskCatalog, admit, environment_of
from kernelgym.service.dispatch import Dispatcher, system_error_result
from kernelgym.service.backend import Backend
from kernelgym.service.metrics import ServiceMetrics
from kernelgym.service.store import CANCELLED, RUNNING, NewRequest, Record, Store

log = logging.getLogger(__name__)


class ServiceClosed(RuntimeError):
    """The service is not running (not started yet, or shutting down)."""


class UnknownRequest(KeyError):
    """Ids the store has never seen."""


class _Listeners:
    """Callbacks waiting for ids to become final (each id becomes final once, so each fires once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, list[Callable[[str], None]]] = {}

    def add(self, ids: Iterable[str], fn: Callable[[str], None]) -> None:
        with self._lock:
            for i in ids:
                self._by_id.setdefault(i, []).append(fn)

    def remove(self, ids: Iterable[str], fn: Callable[[str], None]) -> None:
        with self._lock:
            for i in ids:
                fns = self._by_id.get(i)
                if fns and fn in fns:
                    fns.remove(fn)
                    if not fns:
                        del self._by_id[i]

    def fire(self, request_id: str) -> None:
        with self._lock:
            fns = list(self._by_id.get(request_id, ()))
        for fn in fns:
            fn(request_id)


class Service:
    """Accepts judging requests, schedules them on a `Backend`, stores and delivers the results."""

    def __init__(self, backend: Backend, store: Store, *, max_attempts: int = 3, limits: Limits | None = None,
                 catalog: TaskCatalog | None = None, payload_ttl_days: float | None = None,
                 janitor_interval_s: float = 3600.0, gpu_model: str | None = None,
                 lost_after_s: float = 3600.0) -> None:
        """`gpu_model` names the GPUs in the content key when the backend's stats do not.
        `lost_after_s`: a job without an outcome after this long (or twice its `timeout_s`, if
        longer) is treated as lost and retried, so a backend bug cannot leave a request unanswered."""
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self.backend, self.store = backend, store
        self.max_attempts = max_attempts
        self.limits = limits or Limits()
        self.catalog = catalog or TaskCatalog()
        self.payload_ttl_days = payload_ttl_days
        self._janitor_interval_s = janitor_interval_s
        self._listeners = _Listeners()
        self._running = False
        self._stop = threading.Event()
        self._janitor: threading.Thread | None = None
        self._environment: dict[str, Any] = {}
        self._gpu_model = gpu_model
        self._metrics = ServiceMetrics(backend.stats, lambda: self._dispatcher.queue_depth(),
                                       lambda: self._dispatcher.in_flight(), lambda: self._dispatcher.capacity())
        self._dispatcher = Dispatcher(backend, store, self._metrics, self._finalize, max_attempts, lost_after_s)

    # --- lifecycle -----------------------------------------------------------------------------

    def start(self) -> "Service":
        """Start the backend, queue what a previous process left unfinished, start dispatching."""
        if self._running:
            return self
        self.backend.start()
        self._environment = environment_of(self.backend.stats(), self._gpu_model)
        self._dispatcher.clear()  # the store is the truth; a restarted Service rebuilds its queue from it
        self._resume()
        self._stop.clear()
        self._dispatcher.start()
        if self.payload_ttl_days is not None:
            self._janitor = threading.Thread(target=self._janitor_loop, name="kernelgym-janitor", daemon=True)
            self._janitor.start()
        self._running = True
        return self

    def close(self) -> None:
        """Stop dispatching and shut the backend down. Jobs in flight come back as retryable and are
        left pending, with the attempt refunded, for the next start; the store stays open (its owner closes it)."""
        if not self._running:
            return
        self._running = False  # refuse new submits first
        self._stop.set()
        self._dispatcher.stop()
        if self._janitor is not None:
            self._janitor.join(timeout=30)
        self.backend.shutdown()

    def __enter__(self) -> "Service":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _resume(self) -> None:
        queued = []
        for request_id, state, attempts in self.store.unfinished():
            if state == RUNNING and attempts >= self.max_attempts:
                rec = self.store.get(request_id)
                why = "the service stopped while judging it"
                result = system_error_result(rec.task_id if rec else "", attempts, why)
                self._finalize(request_id, result, "", None, rec.created_at if rec else None, None)
                continue
            if state == RUNNING:
                self.store.requeue(request_id)  # the attempt it was on counts: it may be what killed the process
            queued.append(request_id)
        if queued:
            log.info("resuming %d unfinished requests", len(queued))
        self._dispatcher.enqueue(queued)

    # --- requests ------------------------------------------------------------------------------

    def submit(self, requests: Sequence[EvalRequest | dict[str, Any]]) -> Submission:
        """Validate and persist a batch, then queue it. Raises `RequestRejected` (nothing accepted)
        for a bad request. Once this returns, every id will get exactly one final state."""
        if not self._running:
            raise ServiceClosed("the service is not running")
        reqs = [r if isinstance(r, EvalRequest) else EvalRequest.from_dict(r) for r in requests]
        admitted = admit(reqs, self.catalog, self.limits, self._environment)
        batch_id = uuid.uuid4().hex
        rows = [NewRequest(id=uuid.uuid4().hex, batch_id=batch_id, seq=i, key=a.key, task_id=a.request.task_id,
                           answer=a.request.answer, config=a.request.config, task_source=a.request.task_source)
                for i, a in enumerate(admitted)]
        hits = self.store.cached_results(r.key for r in rows)
        cached = {row.id: hits[row.key] for row in rows if row.key in hits}
        self.store.insert(rows, cached)
        self._metrics.submitted(len(rows), len(cached))
        for row in rows:
            if row.id in cached:
                self._metrics.finished(cached[row.id][1].get("status", ""), 0.0)
        self._dispatcher.enqueue(r.id for r in rows if r.id not in cached)
        return Submission(batch_id=batch_id, ids=[r.id for r in rows], cache_hits=len(cached))

    def get(self, request_id: str) -> Record | None:
        """The request's record now (None if the id is unknown)."""
        return self.store.get(request_id)

    def batch(self, batch_id: str) -> list[str]:
        """The ids of a batch in submission order (empty if unknown)."""
        return self.store.batch_ids(batch_id)

    def wait(self, ids: Sequence[str], timeout: float | None = None) -> list[Record]:
        """Block until every id is final or `timeout` seconds pass; the records, in the order of
        `ids`, final or not. Raises `UnknownRequest` naming unknown ids."""
        ids = list(dict.fromkeys(ids))
        remaining, lock, all_final = set(ids), threading.Lock(), threading.Event()

        def on_final(request_id: str) -> None:
            with lock:
                remaining.discard(request_id)
                if not remaining:
                    all_final.set()

        self._listeners.add(ids, on_final)  # before reading, so no finish falls between read and wait
        try:
            for rec in self._known(ids).values():
                if rec.final:
                    on_final(rec.id)
            if ids:
                all_final.wait(timeout)
        finally:
            self._listeners.remove(ids, on_final)
        records = self.store.get_many(ids)
        return [records[i] for i in ids]

    async def stream(self, ids: Sequence[str], timeout: float | None = None) -> AsyncIterator[Record]:
        """Yield each id's record once it is final, in the order they finish (already final ones
        first), until all are or `timeout` seconds pass. Raises `UnknownRequest` naming unknown ids."""
        ids = list(dict.fromkeys(ids))
        loop = asyncio.get_running_loop()
        arrived: asyncio.Queue[str] = asyncio.Queue()

        def on_final(request_id: str) -> None:
            try:
                loop.call_soon_threadsafe(arrived.put_nowait, request_id)
            except RuntimeError:  # the consumer's loop is gone; nobody is listening any more
                pass

        self._listeners.add(ids, on_final)
        try:
            records = await asyncio.to_thread(self._known, ids)
            sent: set[str] = set()
            for i in ids:
                if records[i].final:
                    sent.add(i)
                    yield records[i]
            deadline = None if timeout is None else loop.time() + timeout
            while len(sent) < len(ids):
                left = None if deadline is None else deadline - loop.time()
                if left is not None and left <= 0:
                    return
                try:
                    batch = [await asyncio.wait_for(arrived.get(), left)]
                except asyncio.TimeoutError:
                    return
                while not arrived.empty():  # read everything that finished meanwhile in one query
                    batch.append(arrived.get_nowait())
                fresh = [i for i in dict.fromkeys(batch) if i not in sent]
                for rec in (await asyncio.to_thread(self.store.get_many, fresh)).values():
                    sent.add(rec.id)
                    yield rec
        finally:
            self._listeners.remove(ids, on_final)

    async def wait_async(self, ids: Sequence[str], timeout: float | None = None) -> list[Record]:
        """`wait` for event-loop callers: holds no thread while it waits."""
        async for _ in self.stream(ids, timeout):
            pass
        records = await asyncio.to_thread(self.store.get_many, ids)
        return [records[i] for i in dict.fromkeys(ids)]

    def evaluate(self, request: EvalRequest | dict[str, Any], timeout: float | None = None) -> EvalResult | None:
        """Submit one request and wait for its result (None if `timeout` passed first or it was cancelled)."""
        [rec] = self.wait(self.submit([request]).ids, timeout)
        return rec.result

    def cancel(self, request_id: str) -> bool:
        """Cancel a request that has no result yet; True if this call cancelled it. A job already
        running on a worker is not interrupted: its result, when it comes, is dropped."""
        self._dispatcher.withdraw(request_id)
        if not self.store.cancel(request_id):
            return False
        rec = self.store.get(request_id)
        self._metrics.finished(CANCELLED, time.time() - rec.created_at if rec else 0.0)
        self._listeners.fire(request_id)
        return True

    def _known(self, ids: list[str]) -> dict[str, Record]:
        records = self.store.get_many(ids)
        unknown = [i for i in ids if i not in records]
        if unknown:
            more = " ..." if len(unknown) > 10 else ""
            raise UnknownRequest(f"unknown request ids: {', '.join(unknown[:10])}{more}")
        return records

    def _finalize(self, request_id: str, result: dict[str, Any], worker: str, cached_from: str | None,
                  created_at: float | None, eval_s: float | None) -> None:
        """Write a request's one result and tell whoever waits for it (no-op if it is already final)."""
        if not self.store.finish(request_id, result, worker, cached_from):
            self._metrics.ignored("already_final")  # cancelled while it ran
            return
        latency = 0.0 if created_at is None else time.time() - created_at
        self._metrics.finished(str(result.get("status", "")), latency, eval_s)
        self._listeners.fire(request_id)

    def _janitor_loop(self) -> None:
        assert self.payload_ttl_days is not None
        while True:
            if self._stop.wait(self._janitor_interval_s):
                return
            purged = self.store.purge_payloads(self.payload_ttl_days * 86400)
            if purged:
                log.info("purged the answers of %d requests older than %s days", purged, self.payload_ttl_days)

    # --- observability -------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        """Liveness and load: `status` is ok while the dispatcher runs."""
        alive = self._running and self._dispatcher.alive
        return {"status": "ok" if alive else "down", "queue_depth": self._dispatcher.queue_depth(),
                "in_flight": self._dispatcher.in_flight(), "capacity": self._dispatcher.capacity(),
                "max_attempts": self.max_attempts,
                "environment": self._environment, "backend": self.backend.stats(), "store": self.store.path}

    def metrics(self) -> dict[str, Any]:
        """Counters since start, rates and latency percentiles, queue and store counts."""
        return {**self._metrics.snapshot(), "queue_depth": self._dispatcher.queue_depth(),
                "in_flight": self._dispatcher.in_flight(), "capacity": self._dispatcher.capacity(),
                "store": self.store.counts()}

    def prometheus_text(self) -> bytes:
        """The metrics in Prometheus' text format (`/metrics`)."""
        return self._metrics.prometheus_text()

