"""Fixtures for the service tests: `FakeBackend` (canned results from a thread pool, with worker
deaths, delays and duplicate reports on demand) and a real uvicorn server in a thread."""

from __future__ import annotations

import contextlib
import hashlib
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from kernelgym.jobs import Job, JobOutcome, OutcomeCallback
from kernelgym.judge.result import EvalResult, Status
from kernelgym.service.service import Service
from kernelgym.service.store import Store

RELU = "relu"  # a built-in task id: admission resolves it for real


def answer_tag(answer: str) -> str:
    """What FakeBackend writes into a result's message, so tests can match results to requests."""
    return "answer:" + hashlib.sha256(answer.encode()).hexdigest()[:16]


class FakeBackend:
    """A `Backend` whose "workers" are pool threads returning canned results after `delay` seconds.

    Answers containing WRONG are judged `wrong_output`; POISON always fails retryably (a worker
    that dies on it); FATAL fails without retry; LOSE is never reported on its first attempt (a
    backend bug); SLOW takes 2 s more. `kill()` fails every job in flight retryably, as
    a dying worker does. `duplicate=True` reports every outcome twice."""

    def __init__(self, capacity: int = 4, delay: float = 0.0, duplicate: bool = False,
                 stats: dict[str, Any] | None = None, workers: int | None = None) -> None:
        self._capacity = capacity
        self._workers = workers or capacity  # fewer workers than capacity: jobs queue inside the backend
        self.delay = delay
        self.duplicate = duplicate
        self.extra_stats = stats or {"gpu_model": "FakeGPU 80GB"}
        self.submitted: list[Job] = []  # every job received, retries included
        self.judged: Counter[str] = Counter()  # job id -> results delivered
        self.kills = 0
        self._lock = threading.Lock()
        self._flights: dict[str, tuple[Job, OutcomeCallback, threading.Event]] = {}
        self._started_jobs: set[str] = set()
        self._pool: ThreadPoolExecutor | None = None
        self._busy_s = 0.0

    def start(self) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="fake-worker")

    def capacity(self) -> int:
        return self._capacity

    def submit(self, job: Job, on_done: OutcomeCallback) -> None:
        assert self._pool is not None, "submit before start"
        flight = (job, on_done, threading.Event())
        with self._lock:
            assert job.id not in self._flights, f"job {job.id} submitted while already in flight"
            self.submitted.append(job)
            self._flights[job.id] = flight
        self._pool.submit(self._run, flight)

    def _run(self, flight: tuple[Job, OutcomeCallback, threading.Event]) -> None:
        job, on_done, killed = flight
        with self._lock:
            if self._flights.get(job.id) is not flight:
                return  # killed or cancelled before it started
            self._started_jobs.add(job.id)
        t0 = time.monotonic()
        if killed.wait(self.delay + (2.0 if "SLOW" in job.answer else 0.0)):
            return  # kill() already reported it
        with self._lock:
            # Identity, not the id: after a kill the same id may be in flight again as its next attempt.
            if self._flights.get(job.id) is not flight:
                return
            del self._flights[job.id]
            self._started_jobs.discard(job.id)
            self._busy_s += time.monotonic() - t0
            if "LOSE" in job.answer and job.attempt == 1:
                return  # a broken backend: this job is never reported
            if "POISON" not in job.answer and "FATAL" not in job.answer:
                self.judged[job.id] += 1
        outcome = self._outcome(job)
        on_done(outcome)
        if self.duplicate:
            on_done(outcome)

    def _outcome(self, job: Job) -> JobOutcome:
        if "POISON" in job.answer:
            return JobOutcome(job_id=job.id, system_error="worker died (signal 9)", retryable=True, worker="fake")
        if "FATAL" in job.answer:
            return JobOutcome(job_id=job.id, system_error="backend cannot run this", retryable=False, worker="fake")
        status = Status.WRONG_OUTPUT if "WRONG" in job.answer else Status.OK
        result = EvalResult(status=status, task_id=job.task_id, message=answer_tag(job.answer), device="fake",
                            compiled=True, correct=status is Status.OK)
        return JobOutcome(job_id=job.id, result=result.to_dict(), worker="fake:0")

    def kill(self) -> int:
        """Every job in flight fails as if its worker died; returns how many."""
        with self._lock:
            victims = list(self._flights.values())
            self._flights.clear()
            self._started_jobs.clear()
            self.kills += 1
        for job, on_done, killed in victims:
            killed.set()
            on_done(JobOutcome(job_id=job.id, system_error="worker process died", retryable=True, worker="fake"))
        return len(victims)

    def started(self) -> set[str]:
        """Ids of the jobs a worker is running now (the rest of those in flight wait for a worker)."""
        with self._lock:
            return set(self._started_jobs)

    def cancel(self, job_id: str) -> bool:
        with self._lock:
            if job_id in self._flights and job_id not in self._started_jobs:
                self._flights.pop(job_id)
                return True
            return False

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"backend": "fake", "workers_alive": self._capacity, "in_flight": len(self._flights),
                    "busy_seconds": {"fake:0": self._busy_s}, **self.extra_stats}

    def shutdown(self) -> None:
        self.kill()
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "results.db"


@pytest.fixture
def make_service(db_path: Path) -> Iterator[Callable[..., Service]]:
    """Build and start Services over `db_path` (all closed, with their stores, at teardown)."""
    made: list[tuple[Service, Store]] = []

    def make(backend: Any = None, start: bool = True, **kwargs: Any) -> Service:
        store = Store(db_path)
        service = Service(backend if backend is not None else FakeBackend(), store, **kwargs)
        made.append((service, store))
        return service.start() if start else service

    yield make
    for service, store in made:
        service.close()
        store.close()


def eventually(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    """Poll `condition` until it holds or `timeout` passes (for effects that land just after a wait)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def request(answer: str, task_id: str = RELU, **kw: Any) -> dict[str, Any]:
    return {"task_id": task_id, "answer": answer, **kw}


@contextlib.contextmanager
def running_server(app: Any) -> Iterator[str]:
    """Serve `app` with a real uvicorn in a thread; yields its base URL."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", backlog=1024))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()
