import asyncio
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.service.conftest import FakeBackend, answer_tag, eventually, request
from kernelgym.judge.result import Status
from kernelgym.service.admission import RequestRejected
from kernelgym.service.store import CANCELLED, DONE, NewRequest, Store
from kernelgym.tasks.loaders import builtin_answer_path
from kernelgym.worker.evaluator import Evaluator


def _assert_answered_once(records, answers, backend):
    """Every request final with the result of its own answer, judged at most once."""
    assert len(records) == len(answers) and all(r.state == DONE for r in records)
    for rec, answer in zip(records, answers):
        if rec.result.status is Status.OK:
            assert rec.result.message == answer_tag(answer)
    assert all(n == 1 for n in backend.judged.values())


def test_batch_is_judged_and_results_match_requests(make_service):
    backend = FakeBackend(capacity=3, delay=0.01)
    svc = make_service(backend)
    answers = [f"kernel {i}" for i in range(20)] + ["WRONG kernel"]
    sub = svc.submit([request(a) for a in answers])
    records = svc.wait(sub.ids, timeout=30)
    _assert_answered_once(records, answers, backend)
    assert records[-1].result.status is Status.WRONG_OUTPUT
    assert svc.batch(sub.batch_id) == sub.ids
    assert svc.metrics()["results"] == {"ok": 20, "wrong_output": 1}


def test_exactly_once_when_workers_die_mid_batch(make_service):
    backend = FakeBackend(capacity=8, delay=0.02)
    svc = make_service(backend)
    answers = [f"kernel {i}" for i in range(300)]
    sub = svc.submit([request(a) for a in answers])
    stop = threading.Event()

    def killer() -> None:
        while not stop.wait(0.03) and backend.kills < 15:
            backend.kill()

    t = threading.Thread(target=killer)
    t.start()
    records = svc.wait(sub.ids, timeout=60)
    stop.set()
    t.join()
    _assert_answered_once(records, answers, backend)
    metrics = svc.metrics()
    assert metrics["retries"] > 0 and sum(metrics["results"].values()) == 300
    for rec in records:  # a request either got its verdict or spent all its attempts
        assert rec.result.status is Status.OK or (rec.result.status is Status.SYSTEM_ERROR and rec.attempts == 3)
    assert len(backend.submitted) == 300 + metrics["retries"]


def test_retries_are_bounded_then_system_error_says_why(make_service):
    backend = FakeBackend()
    svc = make_service(backend)
    poison, fatal = svc.wait(svc.submit([request("POISON"), request("FATAL")]).ids, timeout=10)
    assert poison.result.status is Status.SYSTEM_ERROR and poison.attempts == 3
    assert "3 time(s)" in poison.result.message and "worker died" in poison.result.message
    assert fatal.result.status is Status.SYSTEM_ERROR and fatal.attempts == 1, "non-retryable: no retry"
    assert "backend cannot run this" in fatal.result.message
    again = svc.submit([request("POISON")])
    assert again.cache_hits == 0, "a system_error says nothing about the answer: judge it again"


def test_duplicate_outcomes_are_ignored_and_counted(make_service):
    backend = FakeBackend(duplicate=True)
    svc = make_service(backend)
    records = svc.wait(svc.submit([request(f"k{i}") for i in range(10)]).ids, timeout=10)
    assert all(r.state == DONE for r in records)
    assert eventually(lambda: svc.metrics()["ignored_outcomes"] == {"duplicate": 10})
    assert sum(svc.metrics()["results"].values()) == 10


def test_a_job_the_backend_never_reports_is_retried_by_the_watchdog(make_service):
    backend = FakeBackend()
    svc = make_service(backend, lost_after_s=0.3)
    [rec] = svc.wait(svc.submit([request("LOSE me")]).ids, timeout=10)
    assert rec.result.status is Status.OK and rec.attempts == 2
    assert svc.metrics()["lost_jobs"] == 1


def test_repeated_answers_come_from_the_store(make_service):
    backend = FakeBackend()
    svc = make_service(backend)
    [first] = svc.wait(svc.submit([request("same kernel")]).ids, timeout=10)
    sub = svc.submit([request("same kernel"), request("same kernel", config={"num_trials": 2})])
    assert sub.cache_hits == 1
    cached, other = svc.wait(sub.ids, timeout=10)
    assert cached.cached and cached.result.message == first.result.message
    assert not other.cached, "a different judge config is a different verdict"
    assert len(backend.submitted) == 2
    # spelling out a default does not change the key
    assert svc.submit([request("same kernel", config={"num_trials": 5})]).cache_hits == 1


def test_identical_requests_in_flight_are_judged_once(make_service):
    backend = FakeBackend(capacity=4, delay=0.05)
    svc = make_service(backend)
    records = svc.wait(svc.submit([request("dup")] * 6).ids, timeout=10)
    assert len(backend.submitted) == 1
    assert sum(r.cached for r in records) == 5 and {r.result.status for r in records} == {Status.OK}


def test_cancel_queued_running_and_finished(make_service):
    backend = FakeBackend(capacity=1, delay=0.3)
    svc = make_service(backend)
    ids = svc.submit([request(f"k{i}") for i in range(3)]).ids
    assert eventually(lambda: backend.started() == {ids[0]})  # k0 is running on the only worker
    assert svc.cancel(ids[2]) and svc.cancel(ids[0])
    assert not svc.cancel(ids[2]) and not svc.cancel("no-such-id")
    records = svc.wait(ids, timeout=10)
    assert [r.state for r in records] == [CANCELLED, DONE, CANCELLED]
    assert records[0].result is None and records[2].result is None
    assert [j.answer for j in backend.submitted] == ["k0", "k1"], "a cancelled queued request is never sent"
    assert eventually(lambda: svc.metrics()["ignored_outcomes"] == {"already_final": 1}), \
        "the running job's late result is dropped"
    assert not svc.cancel(ids[1])


def test_cancel_frees_a_slot_the_backend_had_not_started(make_service):
    backend = FakeBackend(capacity=2, workers=1, delay=0.3)
    svc = make_service(backend)
    ids = svc.submit([request("k0"), request("k1"), request("k2")]).ids
    # k0 runs, k1 waits inside the backend for its only worker
    assert eventually(lambda: len(backend.submitted) == 2 and backend.started() == {ids[0]})
    assert svc.cancel(ids[1])
    records = svc.wait(ids, timeout=10)
    assert [r.state for r in records] == [DONE, CANCELLED, DONE]
    assert "k1" not in {j.answer for j in backend.submitted if backend.judged[j.id]}


def test_restart_after_graceful_close_resumes_without_duplicates(make_service):
    first = FakeBackend(capacity=2, delay=0.1)
    svc = make_service(first)
    answers = [f"k{i}" for i in range(10)]
    ids = svc.submit([request(a) for a in answers]).ids
    assert eventually(lambda: sum(r.final for r in svc.wait(ids, timeout=0)) >= 2)
    svc.close()
    done_before = {r.id for r in svc.wait(ids, timeout=0) if r.state == DONE}
    assert 0 < len(done_before) < 10
    second = FakeBackend(capacity=4)
    records = make_service(second).wait(ids, timeout=10)
    _assert_answered_once(records, answers, second)
    assert not done_before & {j.id for j in second.submitted}, "finished work is never judged again"
    assert all(r.attempts == 1 for r in records), "a graceful shutdown does not cost an attempt"


CRASHING_SERVER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.service.conftest import FakeBackend, request
from kernelgym.service.service import Service
from kernelgym.service.store import Store
svc = Service(FakeBackend(capacity=4, delay=0.3), Store({db!r})).start()
sub = svc.submit([request(f"k{{i}}") for i in range(30)])
print(" ".join(sub.ids), flush=True)
time.sleep(120)
"""


def test_server_killed_mid_batch_resumes_on_the_same_file(make_service, db_path):
    script = CRASHING_SERVER.format(root=str(Path(__file__).parents[2]), db=str(db_path))
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], stdout=subprocess.PIPE, text=True)
    try:
        ids = proc.stdout.readline().split()
        assert len(ids) == 30
        probe = sqlite3.connect(db_path)
        deadline = time.monotonic() + 30
        while True:  # kill once some results are stored and some jobs are in flight
            states = dict(probe.execute("SELECT state, COUNT(*) FROM requests GROUP BY state").fetchall())
            if states.get("done", 0) >= 4 and states.get("running", 0) >= 2:
                break
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.kill()  # SIGKILL: no shutdown code runs, jobs are left "running"
        proc.wait()
    states = dict(probe.execute("SELECT id, state FROM requests").fetchall())
    done_before = {i for i, s in states.items() if s == "done"}
    running_at_crash = {i for i, s in states.items() if s == "running"}
    assert running_at_crash, "the crash should catch jobs in flight"
    backend = FakeBackend(capacity=4)
    records = make_service(backend).wait(ids, timeout=30)
    _assert_answered_once(records, [f"k{i}" for i in range(30)], backend)
    assert not done_before & {j.id for j in backend.submitted}
    assert {r.id for r in records if r.attempts == 2} == running_at_crash, "the crashed attempt counts"


def test_request_running_when_the_server_died_too_often_gets_a_system_error(make_service, db_path):
    store = Store(db_path)
    store.insert([NewRequest(id="r0", batch_id="b", seq=0, key="k", task_id="relu", answer="x", config={})], {})
    for _ in range(3):
        store.mark_running("r0")
        if _ < 2:
            store.requeue("r0")
    backend = FakeBackend()
    rec = make_service(backend).get("r0")
    assert rec.result.status is Status.SYSTEM_ERROR and "stopped while judging" in rec.result.message
    assert backend.submitted == []


@pytest.mark.parametrize("requests, reason, words", [
    ([], "empty_batch", "empty"),
    ([request("x", task_id="no_such_task")], "unknown_task", "unknown built-in task"),
    ([request("x" * 2_000_001)], "answer_too_large", "bytes"),
    ([request("x", config={"bogus": 1})], "bad_config", "bogus"),
    ([request("x", config={"num_trials": 0})], "bad_config", "num_trials"),
    ([request("x", task_source="print('not a task')")], "unknown_task", "does not define"),
    ([request("x")] * 5000, "batch_too_large", "at most"),
])
def test_bad_requests_are_refused_whole(make_service, requests, reason, words):
    svc = make_service()
    with pytest.raises(RequestRejected) as e:
        svc.submit(requests)
    assert e.value.reason == reason and words in str(e.value)
    assert svc.store.counts()["states"] == {}, "nothing of a refused batch is stored"


def test_inline_task_source_is_accepted(make_service):
    source = (Path(builtin_answer_path("relu")).parents[1] / "tasks" / "relu.py").read_text()
    svc = make_service()
    [rec] = svc.wait(svc.submit([request("k", task_id="my_relu", task_source=source)]).ids, timeout=10)
    assert rec.result.status is Status.OK and rec.task_id == "my_relu"


def test_stream_yields_each_result_once_as_it_finishes(make_service):
    svc = make_service(FakeBackend(capacity=2, delay=0.02))
    ids = svc.submit([request(f"k{i}") for i in range(12)]).ids

    async def collect():
        return [rec async for rec in svc.stream(ids, timeout=30)]

    streamed = asyncio.run(collect())
    assert sorted(r.id for r in streamed) == sorted(ids) and all(r.final for r in streamed)
    assert [r.id for r in asyncio.run(collect())] == ids, "already-final results come in submission order"


def test_wait_times_out_with_unfinished_records(make_service):
    svc = make_service(FakeBackend(capacity=1))
    ids = svc.submit([request("SLOW")]).ids
    records = svc.wait(ids, timeout=0.1)
    assert not records[0].final  # it returned at its timeout, before the slow job's result


def test_many_threads_submitting_and_waiting(make_service):
    backend = FakeBackend(capacity=8, delay=0.005)
    svc = make_service(backend)

    def client(n: int) -> list:
        answers = [f"c{n} k{i}" for i in range(10)]
        return list(zip(svc.wait(svc.submit([request(a) for a in answers]).ids, timeout=30), answers))

    with ThreadPoolExecutor(16) as pool:
        pairs = [p for chunk in pool.map(client, range(16)) for p in chunk]
    _assert_answered_once([r for r, _ in pairs], [a for _, a in pairs], backend)
    assert len(backend.submitted) == 160


def test_payload_ttl_janitor_purges_answers_and_keeps_results(make_service, db_path):
    svc = make_service(payload_ttl_days=0, janitor_interval_s=0.05)
    [rec] = svc.wait(svc.submit([request("secret")]).ids, timeout=10)
    probe = sqlite3.connect(db_path)
    deadline = time.monotonic() + 60  # the janitor runs every 0.05 s; a loaded machine may run it late
    while probe.execute("SELECT answer FROM requests WHERE id = ?", (rec.id,)).fetchone()[0] is not None:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert svc.get(rec.id).result.status is Status.OK


def test_health_and_metrics(make_service):
    svc = make_service(FakeBackend(capacity=3))
    svc.wait(svc.submit([request("a"), request("WRONG")]).ids, timeout=10)
    health = svc.health()
    assert health["status"] == "ok" and health["capacity"] == 3
    assert health["environment"]["gpu_model"] == "FakeGPU 80GB"
    m = svc.metrics()
    assert m["store"]["statuses"] == {"ok": 1, "wrong_output": 1} and m["latency_s"]["p50"] is not None
    text = svc.prometheus_text().decode()
    assert 'kernelgym_results_total{status="wrong_output"} 1.0' in text
    assert 'kernelgym_device_busy_seconds_total{device="fake:0"}' in text
    assert "kernelgym_queue_depth 0.0" in text and "kernelgym_request_latency_seconds_bucket" in text


class EvaluatorBackend:
    """The smallest real backend: the worker's `Evaluator` on the CPU, one job at a time, in a thread."""

    def __init__(self) -> None:
        self.evaluator = Evaluator("cpu")
        self.pool = ThreadPoolExecutor(1)

    def start(self) -> None: ...

    def capacity(self) -> int:
        return 1

    def submit(self, job, on_done) -> None:
        self.pool.submit(lambda: on_done(self.evaluator.evaluate(job)))

    def cancel(self, job_id: str) -> bool:
        return False

    def stats(self) -> dict:
        return {"backend": "evaluator"}

    def shutdown(self) -> None:
        self.pool.shutdown(wait=True)


def test_real_evaluator_judges_the_builtin_relu_answer(make_service):
    svc = make_service(EvaluatorBackend())
    answer = builtin_answer_path("relu").read_text()
    result = svc.evaluate(request(answer, config={"num_trials": 1}), timeout=300)
    assert result.status is Status.OK, result.message
    assert result.correct and result.task_id == "relu" and result.device == "cpu"
