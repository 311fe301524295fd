"""Concurrent judging in threads must give the same verdicts as judging one at a time."""

from kernelgym.judge import JudgeConfig, Status
from kernelgym.judge.batch import judge_many
from kernelgym.tasks import builtin_answer_path, load_builtin


def test_threads_do_not_mix_seeds_inputs_or_weights():
    # tasks with weights (seeded init) and random inputs, judged 4 at a time, twice each
    ids = ["linear_bias_relu", "conv1d", "rms_norm", "softmax", "batch_norm_inference", "relu"]
    pairs = [(load_builtin(t)[0], builtin_answer_path(t).read_text()) for t in ids for _ in range(2)]
    seen = []
    results = judge_many(pairs, JudgeConfig(device="cpu", timeout_s=240), jobs=4, progress=False,
                         on_result=seen.append)
    assert [r.task_id for r in results] == [t for t in ids for _ in range(2)]
    assert all(r.status is Status.OK for r in results), [(r.task_id, r.message) for r in results if not r.ok]
    assert len(seen) == len(pairs)


def _judge_failing_once(monkeypatch, failing_answer, fail):
    """Replace `batch.judge` with one that calls `fail()` on `failing_answer`'s first evaluation and
    records (answer, evaluations running at that moment) for every call."""
    import threading
    import time

    from kernelgym.judge import batch
    from kernelgym.judge.result import EvalResult

    calls, running = [], [0]
    lock = threading.Lock()

    def fake_judge(task, answer, config):
        with lock:
            running[0] += 1
            calls.append((answer, running[0]))
        try:
            time.sleep(0.05)
            if answer == failing_answer and sum(1 for a, _ in calls if a == answer) == 1:
                return fail(task)
            return EvalResult(status=Status.OK, task_id=task.task_id)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(batch, "judge", fake_judge)
    return calls


def test_oom_is_judged_again_alone(monkeypatch):
    # An OOM beside other evaluations may be a neighbour's fault: the answer is judged again with the
    # device to itself, and that verdict is the one reported.
    from kernelgym.judge import batch
    from kernelgym.judge.result import EvalResult

    calls = _judge_failing_once(monkeypatch, "oom-once", lambda task: EvalResult(status=Status.OOM, task_id=task.task_id))
    task = load_builtin("relu")[0]
    pairs = [(task, "oom-once")] + [(task, f"ok{i}") for i in range(6)]
    results = batch.judge_many(pairs, JudgeConfig(device="cpu"), jobs=4, progress=False)
    assert [r.status for r in results] == [Status.OK] * 7
    retry = [depth for a, depth in calls if a == "oom-once"][1]
    assert retry == 1, "the retry must run with nothing else on the device"
    assert len(calls) == 8


def test_the_judges_own_out_of_memory_is_judged_again_alone(monkeypatch):
    # The trusted side's GPU allocations (reference outputs, copies of the answer's) can fail beside
    # other evaluations too: that is no verdict on the answer, and no lost job either.
    import torch

    from kernelgym.judge import batch

    def fail(task):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 64.00 MiB.")

    calls = _judge_failing_once(monkeypatch, "judge-oom-once", fail)
    task = load_builtin("relu")[0]
    pairs = [(task, "judge-oom-once")] + [(task, f"ok{i}") for i in range(5)]
    results = batch.judge_many(pairs, JudgeConfig(device="cpu"), jobs=3, progress=False)
    assert [r.status for r in results] == [Status.OK] * 6
    assert [depth for a, depth in calls if a == "judge-oom-once"][1] == 1


OOM_ONCE_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        if torch._kernelgym_test_oom:  # a neighbour held the GPU's memory when the reference first ran
            torch._kernelgym_test_oom.pop()
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB (stand-in)")
        return torch.relu(x)


def get_inputs():
    return [torch.randn(64, 32)]


def get_init_inputs():
    return []
'''


def test_a_reference_that_runs_out_of_memory_beside_others_is_judged_again_not_a_broken_task(monkeypatch):
    # The twenty-first session's gate run (H200, 16 in flight): a correct answer became `runtime_error`
    # because its task's reference ran out of device memory and that was reported as a broken task.
    import torch

    from kernelgym.judge import batch
    from kernelgym.tasks.task import Task

    # once per test, across the task module's executions (each Reference runs the source afresh)
    monkeypatch.setattr(torch, "_kernelgym_test_oom", [True], raising=False)
    answer = builtin_answer_path("relu").read_text()
    task = Task(task_id="relu_oom_once", source=OOM_ONCE_TASK, origin="test")
    results = batch.judge_many([(task, answer)], JudgeConfig(device="cpu"), jobs=1, progress=False)
    assert [r.status for r in results] == [Status.OK], results[0].message
    assert torch._kernelgym_test_oom == [], "the reference never ran out of memory: the test tests nothing"
