"""train/curriculum.py: which tasks RL draws from."""

import json

import pytest

from kernelgym.tasks import load_builtin
from kernelgym.tasks.task import Task
from train.curriculum import pass_rates, within_max_ops, within_pass_range


def test_task_max_ops_keeps_short_chains_and_tasks_that_do_not_say():
    relu = load_builtin("relu")[0]
    chain = lambda i, n: Task(task_id=f"g{i}", source=relu.source, meta={"num_ops": n})  # noqa: E731
    listed = Task(task_id="l", source=relu.source, meta={"ops": ["relu", "softmax", "gelu", "abs"]})
    tasks = [chain(1, 1), chain(2, 3), chain(3, 4), listed, relu]
    assert [t.task_id for t in within_max_ops(tasks, 3)] == ["g1", "g2", "relu"]
    assert within_max_ops(tasks, 0) == tasks


def test_task_pass_range_keeps_tasks_the_starting_policy_sometimes_solves(tmp_path):
    relu = load_builtin("relu")[0]
    tasks = [Task(task_id=t, source=relu.source) for t in ("never", "half", "always", "unmeasured")]
    rows = [("never", 0, 1, "wrong_output"), ("never", 1, 1, "compile_error"),
            ("half", 0, 1, "wrong_output"), ("half", 0, 2, "ok"),  # sample 0 passes in its second turn
            ("half", 1, 1, "cheat"), ("half", 1, 2, "wrong_output"),
            ("always", 0, 1, "ok"), ("always", 1, 1, "ok")]
    run = tmp_path / "eval_sft_train"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps({"task_id": t, "sample": s, "turn": n, "status": st,
                                                           "result": {}}) + "\n" for t, s, n, st in rows))
    rates = pass_rates(run)
    assert rates == {"never": 0.0, "half": 0.5, "always": 1.0}
    assert pass_rates(run / "results.jsonl") == rates
    assert [t.task_id for t in within_pass_range(tasks, rates, 0.1, 0.9)] == ["half"]
    assert [t.task_id for t in within_pass_range(tasks, rates, 0.1, 0.9, keep_unmeasured=True)] == ["half", "unmeasured"]
    assert len(within_pass_range(tasks, rates, 0.0, 1.0)) == 3


def test_pass_rates_refuses_what_is_not_an_eval_run(tmp_path):
    with pytest.raises(ValueError, match="no .*results.jsonl"):
        pass_rates(tmp_path / "missing")
    (tmp_path / "bad.jsonl").write_text('{"task_id": "x"}\n')
    with pytest.raises(ValueError, match="line 1 of .* is not a kernelgym eval verdict"):
        pass_rates(tmp_path / "bad.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ValueError, match="holds no verdict"):
        pass_rates(tmp_path / "empty.jsonl")
