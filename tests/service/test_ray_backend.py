"""`RayBackend` on a private local Ray cluster with CPU actors: real judging through two actors, an
actor killed mid-job, and shutdown. One cluster for the module; the first two tests share a backend."""

import threading
import time

import pytest
import torch

ray = pytest.importorskip("ray")

from kernelgym.jobs import Job, JobOutcome  # noqa: E402
from kernelgym.service.bench_mix import make_variant  # noqa: E402
from kernelgym.service.ray_backend import NAMESPACE, RayBackend  # noqa: E402
from kernelgym.tasks.loaders import builtin_answer_path  # noqa: E402

RELU = builtin_answer_path("relu").read_text()
# One Ray cluster per xdist worker that runs any of these: keep them on one worker under --dist loadgroup.
pytestmark = pytest.mark.xdist_group("ray")


class Outcomes:
    """An `on_done` that records every call (the backend calls it from its own thread)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.calls: dict[str, list[JobOutcome]] = {}

    def __call__(self, outcome: JobOutcome) -> None:
        with self._cond:
            self.calls.setdefault(outcome.job_id, []).append(outcome)
            self._cond.notify_all()

    def wait(self, *job_ids: str, timeout: float = 60.0) -> dict[str, JobOutcome]:
        with self._cond:
            done = self._cond.wait_for(lambda: all(j in self.calls for j in job_ids), timeout)
            assert done, f"no outcome for {[j for j in job_ids if j not in self.calls]} after {timeout:.0f} s"
            return {j: self.calls[j][0] for j in job_ids}


def relu_job(job_id: str) -> Job:
    return Job(id=job_id, task_id="relu", answer=RELU, config={"num_trials": 1})


def children_of(pid: int) -> list[int]:
    """Pids whose parent is `pid` (from /proc/N/stat: the field after the state)."""
    import os

    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(name))
    return found


def wait_until(predicate, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster():
    # Three logical CPUs: the shared backend's two CPU actors and the shutdown test's one. TRITON_INTERPRET
    # (set by conftest) reaches the actors through the backend's runtime_env, not through this process.
    ray.init(address="local", num_cpus=3, include_dashboard=False, object_store_memory=80 * 2**20,
             log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def backend(cluster):
    b = RayBackend(devices=2, jobs=1, start_timeout=120)
    assert "TRITON_INTERPRET" in b.env_vars
    b.start()
    yield b
    b.shutdown()


def test_judges_relu_on_two_cpu_actors_and_cancels_a_queued_job(backend):
    outcomes = Outcomes()
    before = backend.stats()
    assert backend.capacity() == 2
    for job_id in ("a", "b", "queued"):
        backend.submit(relu_job(job_id), outcomes)
    assert backend.cancel("queued")  # both actors are busy (one job each), so it never left the queue

    got = outcomes.wait("a", "b")
    for outcome in got.values():
        assert outcome.ok and not outcome.system_error
        assert outcome.result["status"] == "ok" and outcome.result["task_id"] == "relu"
    assert len({o.worker for o in got.values()}) == 2  # the least-loaded dispatch used both actors
    stats = backend.stats()
    assert len({(w["node"], w["device"]) for w in stats["workers"]}) == 2  # per-device busy metrics stay apart
    assert (stats["actors_alive"], stats["in_flight"], stats["queued"]) == (2, 0, 0)
    assert stats["restarts"] == before["restarts"] and stats["nodes"] == 1
    assert sum(w["done"] for w in stats["workers"]) == sum(w["done"] for w in before["workers"]) + 2
    # Where verdicts come from (the service's cache key) is the actors' environment: CPU, their versions.
    assert stats["gpu_model"] == "" and stats["versions"]["torch"] == torch.__version__
    assert "queued" not in outcomes.calls


def test_actors_keep_warm_pools_that_serve_the_candidates(backend):
    assert backend.wait_warm(120)
    before = [w["pool"] for w in backend.stats()["workers"]]
    # two warm processes per actor (warm defaults to 2 x jobs: judge v4 uses the answer's process and the
    # replay's), forked from the actor's own fork server
    assert all(p is not None and p["ready"] == p["size"] == 2 and p["fork_server"] for p in before)
    outcomes = Outcomes()
    for job_id in ("warm1", "warm2"):
        backend.submit(relu_job(job_id), outcomes)
    got = outcomes.wait("warm1", "warm2")
    assert all(o.ok and o.result["status"] == "ok" for o in got.values())
    assert backend.wait_warm(120)
    after = [w["pool"] for w in backend.stats()["workers"]]
    # Judge v4 takes two processes per evaluation (the answer's and the replay's): four in all, at
    # least one per evaluation from the pools (a pool refills while its processes are busy).
    handed = sum(p["handed_out"] for p in after) - sum(p["handed_out"] for p in before)
    missed = sum(p["misses"] for p in after) - sum(p["misses"] for p in before)
    assert handed + missed == 4 and handed >= 2


def test_actor_killed_mid_job_gives_one_retryable_outcome_and_is_replaced(backend):
    outcomes = Outcomes()
    assert backend.wait_warm(120)
    restarts = backend.stats()["restarts"]
    # an answer whose forward never returns: the kill lands mid-job however fast the judge is
    endless = make_variant(RELU, "timeout")
    backend.submit(Job(id="doomed", task_id="relu", answer=endless, config={"num_trials": 1, "timeout_s": 60}),
                   outcomes)
    victim = next(w for w in backend.stats()["workers"] if w["in_flight"] == 1)
    wait_until(lambda: children_of(victim["pool"]["fork_server"]), timeout=60)  # the judge got going in the actor
    forked = children_of(victim["pool"]["fork_server"])
    assert forked  # the endless candidate, at least (and the warm process that replaces it)
    ray.kill(ray.get_actor(victim["actor"], namespace=NAMESPACE))

    lost = outcomes.wait("doomed")["doomed"]
    assert lost.result is None and lost.retryable and "died" in lost.system_error

    def gone(pid: int) -> bool:  # exited: no such process, or a zombie left for its reaper
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
        except OSError:
            return True

    # the dead actor's fork server does not outlive it, nor (it kills them as it goes) the endless
    # candidate it forked
    wait_until(lambda: gone(victim["pool"]["fork_server"]) and all(gone(pid) for pid in forked), timeout=30)
    wait_until(lambda: backend.stats()["actors_alive"] == 2)
    stats = backend.stats()
    assert stats["restarts"] == restarts + 1 and stats["in_flight"] == 0
    assert victim["actor"] not in {w["actor"] for w in stats["workers"]}  # a fresh actor holds the slot

    # Both actors, the replacement included, judge again; the death was reported exactly once.
    for job_id in ("after1", "after2"):
        backend.submit(relu_job(job_id), outcomes)
    got = outcomes.wait("after1", "after2")
    assert all(o.ok and o.result["status"] == "ok" for o in got.values())
    assert len(outcomes.calls["doomed"]) == 1


def test_shutdown_gives_in_flight_and_queued_jobs_retryable_outcomes(cluster):
    backend = RayBackend(devices=1, jobs=2, start_timeout=120)  # one actor starts faster than two
    backend.start()
    outcomes = Outcomes()
    for job_id in ("x", "y", "z"):  # two in flight, one queued
        backend.submit(relu_job(job_id), outcomes)
    backend.shutdown()
    backend.shutdown()  # idempotent: nothing delivered twice
    got = outcomes.wait("x", "y", "z", timeout=60)
    assert all(o.retryable and o.system_error and o.result is None for o in got.values())
    backend.submit(relu_job("late"), outcomes)  # after shutdown: refused at once, still exactly one outcome
    assert outcomes.wait("late", timeout=60)["late"].retryable
    time.sleep(0.5)
    assert all(len(calls) == 1 for calls in outcomes.calls.values())
