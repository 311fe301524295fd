"""LocalBackend on CPU: jobs judged by a real worker process, exactly one outcome each, and a
worker killed mid-job costs only its in-flight jobs (retryable) while it comes back."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from kernelgym.jobs import Job, JobOutcome
from kernelgym.service.local_backend import LocalBackend, LocalBackendConfig
from kernelgym.tasks.loaders import builtin_answer_path
from kernelgym.worker.process import WORKER_MARKER_VAR
from tests.answers import relu_answer

RELU = builtin_answer_path("relu").read_text()


def sleeper(started: Path) -> str:
    """An answer whose forward says it started (a file), then sleeps past the moment its worker dies."""
    return relu_answer(f"open({str(started)!r}, 'w').close()\nimport time\ntime.sleep(120)")


class Outcomes:
    """Collects outcomes and fails the test if any job gets two."""

    def __init__(self) -> None:
        self.by_job: dict[str, JobOutcome] = {}
        self.duplicates: list[str] = []
        self._cond = threading.Condition()

    def __call__(self, outcome: JobOutcome) -> None:
        with self._cond:
            if outcome.job_id in self.by_job:
                self.duplicates.append(outcome.job_id)
            self.by_job[outcome.job_id] = outcome
            self._cond.notify_all()

    def wait(self, *job_ids: str, timeout: float = 120) -> None:
        with self._cond:
            assert self._cond.wait_for(lambda: set(job_ids) <= set(self.by_job), timeout), sorted(self.by_job)


def wait_until(predicate, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.05)


@pytest.fixture
def backend(monkeypatch, tmp_path):
    # The workers' temp dirs go here: those of evaluations on a SIGKILLed worker are never removed.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    b = LocalBackend(LocalBackendConfig(devices=("cpu",), jobs_per_worker=2, warm_pool_size=1,
                                        judge_config={"num_trials": 1, "timeout_s": 150}))
    b.start()
    yield b
    b.shutdown()


def test_jobs_get_exactly_one_outcome_each(backend):
    assert backend.capacity() == 2
    outcomes = Outcomes()
    for i in range(3):  # one more than fits: it waits in the backend's queue
        backend.submit(Job(id=f"j{i}", task_id="relu", answer=RELU), outcomes)
    outcomes.wait("j0", "j1", "j2")
    assert all(o.ok and o.result["status"] == "ok" and o.worker == "cpu" for o in outcomes.by_job.values())
    (worker,) = backend.stats()["workers"]
    assert worker["done"] == 3 and worker["in_flight"] == 0 and worker["busy_s"] > 0
    assert backend.stats()["busy_seconds"]["cpu"] == worker["busy_s"]
    assert not outcomes.duplicates


def test_killed_worker_fails_its_in_flight_jobs_only_and_comes_back(backend, tmp_path):
    outcomes = Outcomes()
    no_checks = {"static_checks": False, "engine": "inprocess"}  # the pool counts assume one process per evaluation
    for name in ("sleep-a", "sleep-b"):
        backend.submit(Job(id=name, task_id="relu", answer=sleeper(tmp_path / name), config=no_checks), outcomes)
    backend.submit(Job(id="queued", task_id="relu", answer=RELU), outcomes)
    backend.submit(Job(id="cancelled", task_id="relu", answer=RELU), outcomes)
    assert backend.cancel("cancelled") and not backend.cancel("sleep-a")
    stats = backend.stats()
    assert stats["in_flight"] == 2 and stats["queued"] == 1
    old_pid, old_client = stats["workers"][0]["pid"], backend._slots[0].client
    old_marker, old_root = old_client.marker, old_client.scratch_root
    # Mid-job: both candidates are alive (the answers' own marker files are out of reach once their
    # processes are confined to their scratch dirs).
    wait_until(lambda: len(_marked(old_marker)) >= 2)
    os.kill(old_pid, signal.SIGKILL)

    outcomes.wait("sleep-a", "sleep-b")
    for job_id in ("sleep-a", "sleep-b"):
        o = outcomes.by_job[job_id]
        assert o.result is None and o.retryable and "SIGKILL" in o.system_error
    outcomes.wait("queued")  # ran on the restarted worker
    assert outcomes.by_job["queued"].ok and outcomes.by_job["queued"].result["status"] == "ok"
    assert "cancelled" not in outcomes.by_job and not outcomes.duplicates
    stats = backend.stats()
    assert stats["restarts"] == 1 and stats["workers_alive"] == 1 and stats["workers"][0]["pid"] != old_pid
    assert _marked(old_marker) == []  # the dead worker's candidates were killed, not left sleeping
    assert not old_root.exists()


def test_shutdown_fails_in_flight_jobs_as_retryable(backend, tmp_path):
    outcomes = Outcomes()
    backend.submit(Job(id="sleep", task_id="relu", answer=sleeper(tmp_path / "s"), config={"static_checks": False}),
                   outcomes)
    wait_until(lambda: backend.stats()["in_flight"] == 1)
    backend.shutdown()
    outcomes.wait("sleep", timeout=60)
    assert outcomes.by_job["sleep"].retryable and outcomes.by_job["sleep"].system_error
    assert backend.stats()["workers_alive"] == 0
    backend.submit(Job(id="late", task_id="relu", answer=RELU), outcomes)
    assert outcomes.by_job["late"].retryable and not outcomes.duplicates


def _marked(marker: str) -> list[int]:
    needle = f"{WORKER_MARKER_VAR}={marker}".encode()
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/environ", "rb") as fh:
                    if needle in fh.read():
                        pids.append(int(entry.name))
            except OSError:
                continue
    return pids


def test_wait_warm_returns_once_the_pool_is_full_and_a_restart_waits_again(backend):
    assert backend.wait_warm(120)
    (worker,) = backend.stats()["workers"]
    assert worker["pool"]["ready"] == worker["pool"]["size"] == 1
    os.kill(worker["pid"], signal.SIGKILL)
    deadline = time.monotonic() + 120
    while backend.stats()["workers"][0]["pid"] in (None, worker["pid"]):
        assert time.monotonic() < deadline, backend.stats()
        time.sleep(0.1)
    assert backend.wait_warm(120)
    (again,) = backend.stats()["workers"]
    assert again["pid"] != worker["pid"] and again["pool"]["ready"] == 1


def test_the_warm_pool_holds_two_processes_per_job_by_default():
    # Judge v4 uses two processes per evaluation (the answer's, the replay's): one per job starved the pool.
    assert LocalBackendConfig(devices=("cpu",), jobs_per_worker=3).warm_pool_size == 6
    assert LocalBackendConfig(devices=("cpu",), jobs_per_worker=3, warm_pool_size=1).warm_pool_size == 1


def test_several_workers_share_one_device_and_each_takes_jobs(monkeypatch, tmp_path):
    # A worker's Python (inputs, reference, comparisons, messages) runs under one GIL: a second process on the same
    # device is the way past it. Each is a slot of its own, named apart, and the least-loaded dispatch uses both.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    b = LocalBackend(LocalBackendConfig(devices=("cpu",), jobs_per_worker=1, warm_pool_size=1, workers_per_device=2,
                                        judge_config={"num_trials": 1, "timeout_s": 150}))
    b.start()
    try:
        assert b.capacity() == 2
        workers = b.stats()["workers"]
        assert [w["name"] for w in workers] == ["cpu#0", "cpu#1"] and {w["device"] for w in workers} == {"cpu"}
        assert len({w["pid"] for w in workers}) == 2
        outcomes = Outcomes()
        for i in range(2):  # submitted together: one each, since each worker has a single slot
            b.submit(Job(id=f"j{i}", task_id="relu", answer=RELU), outcomes)
        outcomes.wait("j0", "j1")
        assert all(o.ok and o.result["status"] == "ok" for o in outcomes.by_job.values())
        assert [w["done"] for w in b.stats()["workers"]] == [1, 1]
        assert set(b.stats()["busy_seconds"]) == {"cpu#0", "cpu#1"}
    finally:
        b.shutdown()


def test_workers_per_device_must_be_positive():
    with pytest.raises(ValueError, match="workers_per_device"):
        LocalBackendConfig(devices=("cpu",), workers_per_device=0)
