"""The service benchmark's mixed batch: each kind really reaches the verdict it stands for."""

from collections import Counter

import pytest

from kernelgym.judge import JudgeConfig, judge
from kernelgym.service.bench_mix import DEFAULT_TASKS, EXPECTED, build_mix, make_variant
from kernelgym.tasks import load_builtin
from kernelgym.tasks.loaders import builtin_answer_path

FAST = JudgeConfig(device="cpu", num_trials=1, timeout_s=120)  # a limit these tests do not test: room for a loaded machine


def test_mix_has_the_issue_proportions():
    counts = Counter(item.kind for item in build_mix(100, seed=1))
    assert counts == {"correct": 50, "wrong_output": 20, "compile_error": 15, "crash": 10, "timeout": 5}
    small = Counter(item.kind for item in build_mix(20))
    assert set(small) == {"correct", "wrong_output", "compile_error", "crash", "timeout"} and sum(small.values()) == 20


def test_every_default_task_yields_every_variant():
    for task_id in DEFAULT_TASKS:
        answer = builtin_answer_path(task_id).read_text()
        for kind in ("wrong_output", "compile_error", "crash", "timeout"):
            assert make_variant(answer, kind) != answer


@pytest.mark.parametrize("kind", ["correct", "wrong_output", "compile_error", "crash", "timeout"])
def test_variant_gets_its_verdict(kind):
    task = load_builtin("relu")[0]
    item_answer = make_variant(builtin_answer_path("relu").read_text(), kind)
    config = JudgeConfig(device="cpu", num_trials=1, timeout_s=8) if kind == "timeout" else FAST
    result = judge(task, item_answer, config)
    assert result.status.value in EXPECTED[kind], (kind, result.status, result.message)


def _corpus(tmp_path, task_ids=("gen_relu", "gen_sigmoid")):
    """A cold-start corpus directory as `kernelgym data coldstart` writes it, with built-in tasks and
    answers standing in for generated ones (under other ids: only their sources reach the judge)."""
    import json

    (tmp_path / "tasks").mkdir()
    tasks, rows = [], []
    for task_id in task_ids:
        builtin = task_id.removeprefix("gen_")
        tasks.append({"task_id": task_id, "name": builtin, "code": load_builtin(builtin)[0].source})
        rows.append({"task_id": task_id, "kind": "single", "answer": builtin_answer_path(builtin).read_text()})
        rows.append({"task_id": task_id, "kind": "repair", "answer": "not an answer"})
    (tmp_path / "tasks" / "train.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tasks))
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path


def test_training_mix_groups_answers_per_task_and_carries_the_task_source(tmp_path):
    from kernelgym.service.bench_mix import build_training_mix

    corpus = _corpus(tmp_path)
    items = build_training_mix(20, corpus, seed=3, per_task=10)
    assert Counter(i.kind for i in items) == Counter(it.kind for it in build_mix(20))  # the same proportions
    assert Counter(i.task_id for i in items) == {"gen_relu": 10, "gen_sigmoid": 10}
    for item in items:
        assert item.task_source == load_builtin(item.task_id.removeprefix("gen_"))[0].source
        assert "not an answer" not in item.answer  # repair rows are not answers to vary
    assert build_training_mix(3, corpus, per_task=8)[0].task_id in {"gen_relu", "gen_sigmoid"}
    with pytest.raises(ValueError, match="not a cold-start corpus"):
        build_training_mix(4, tmp_path / "tasks")


def test_training_mix_through_the_service_reaches_each_kinds_verdict(tmp_path):
    from kernelgym.service.bench import run_service_bench
    from kernelgym.service.bench_mix import build_training_mix

    items = build_training_mix(4, _corpus(tmp_path, ("gen_relu",)), per_task=4)
    report = run_service_bench(4, JudgeConfig(device="cpu", num_trials=1, timeout_s=120), jobs=2, warm=1,
                               baseline=True, repeats=0, repeat_tasks=(), items=items)
    for mode in report.modes:
        assert mode.n == 4 and mode.unexpected == [], mode.unexpected
        assert sum(mode.statuses.values()) == 4 and mode.statuses.get("ok") == 2
