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
