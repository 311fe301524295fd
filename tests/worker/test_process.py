"""The worker process: ready with torch loaded, judges jobs, reports outcomes, exits cleanly."""

import os
import queue
import socket

from kernelgym.jobs import Job, JobOutcome
from kernelgym.judge.sandbox import kill_marked
from kernelgym.tasks.loaders import builtin_answer_path
from kernelgym.worker.process import WORKER_MARKER_VAR, WorkerClient, WorkerSpec


def test_worker_judges_jobs_and_exits_when_its_parent_goes():
    messages, exits = queue.Queue(), queue.Queue()
    client = WorkerClient(WorkerSpec("cpu", jobs=2, warm_pool_size=1, judge_config={"num_trials": 1}),
                          on_message=messages.put, on_exit=exits.put)
    client.start(timeout_s=120)
    try:
        assert client.ready_info["pid"] == client.pid and client.ready_info["device"] == "cpu"
        assert {"torch", "triton"} <= set(client.ready_info["versions"])
        client.send_job(Job(id="good", task_id="relu", answer=builtin_answer_path("relu").read_text()))
        client.send_job(Job(id="no-task", task_id="no_such_task_anywhere", answer="x"))
        client.send_job(Job(id="bad-config", task_id="relu", answer="x", config={"no_such_field": 1}))
        got, pool_full = {}, []
        while len(got) < 3:
            msg = messages.get(timeout=120)
            if msg["op"] == "pool":  # once, when the warm pool is first full
                pool_full.append(msg["pool"])
                continue
            assert msg["op"] == "outcome" and msg["seconds"] >= 0 and msg["pool"]["device"] == "cpu"
            outcome = JobOutcome(**msg["outcome"])
            got[outcome.job_id] = outcome
        assert got["good"].ok and got["good"].result["status"] == "ok" and got["good"].worker == "cpu"
        assert got["no-task"].result["fault"] == "task_error" and not got["no-task"].retryable
        assert got["bad-config"].result["fault"] == "bad_config"
        assert len(pool_full) <= 1 and all(p["ready"] == p["size"] == 1 for p in pool_full)
    finally:
        # The parent going away (its end of the socket closing) is how a worker learns to exit.
        socket.socket(fileno=os.dup(client._conn.fileno())).shutdown(socket.SHUT_WR)
    assert "exit:0" in exits.get(timeout=60)
    assert not client.alive() and not client.scratch_root.exists()
    assert kill_marked(client.marker, WORKER_MARKER_VAR) == 0  # it took its warm candidates with it
