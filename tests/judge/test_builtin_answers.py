"""The legitimate corpus: every built-in answer is judged ok on CPU and never flagged."""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.tasks import builtin_answer_path, builtin_task_ids, load_builtin


@pytest.mark.parametrize("task_id", builtin_task_ids())
def test_builtin_answer_is_ok(task_id):
    task = load_builtin(task_id)[0]
    r = judge(task, builtin_answer_path(task_id).read_text(), JudgeConfig(device="cpu", timeout_s=240))
    assert r.status is Status.OK, f"{r.status.value}: {r.message}\n{r.error}"
    assert r.cheats == [] and r.kernels_launched
