"""Preflight: each task's reference work in a limited child; a task over a limit is a check with a
status, and the other tasks are checked all the same."""

import json

import pytest

from kernelgym.judge.config import JudgeConfig
from kernelgym.tasks.audit import TaskAudit
from kernelgym.tasks.limited import ChildLimits
from kernelgym.tasks.preflight import TaskCheck, append_check, check_task, preflight, read_checks
from kernelgym.tasks.task import Task
from tests.tasks import kernelbench_style as kb

CPU = JudgeConfig(device="cpu")
BROKEN = kb.SCALE.replace("return x * 2.0 + 1.0", "return x @ torch.ones(3, 3)")  # shapes do not match


def test_tasks_over_limits_are_checks_with_their_status_and_the_others_pass():
    # The time limit is a ceiling far above what these need (a loaded machine took ~10 s for one): no
    # verdict here depends on the machine's speed. The task that never returns has a test of its own.
    tasks = [Task("hidden_allocation", kb.HIDDEN_ALLOCATION), Task("scale", kb.SCALE), Task("huge", kb.HUGE_WEIGHT),
             Task("broken", BROKEN)]
    seen = []
    checks = preflight(tasks, CPU, ChildLimits(memory_gb=4.0, timeout_s=300), jobs=2, progress=False,
                       on_check=seen.append)
    assert list(checks) == ["hidden_allocation", "scale", "huge", "broken"]  # the tasks' order
    assert sorted(c.task_id for c in seen) == sorted(checks)  # each handed over as it finished
    assert {k: c.status for k, c in checks.items()} == {
        "hidden_allocation": "oom", "scale": "ok", "huge": "too-large", "broken": "error"}
    assert checks["hidden_allocation"].label == "over limits: oom" and checks["broken"].label == "task error"
    assert "Model.forward failed" in checks["broken"].message


def test_a_task_that_never_returns_is_a_timeout_check():
    checks = preflight([Task("hangs", kb.HANGS)], CPU, ChildLimits(timeout_s=3), progress=False)  # any limit
    assert checks["hangs"].status == "timeout" and "limit" in checks["hangs"].message


def test_check_task_in_this_process_builds_the_reference_at_the_judges_size():
    assert check_task(Task("scale", kb.SCALE), CPU) == TaskCheck("scale", "ok")
    assert check_task(Task("huge", kb.HUGE_WEIGHT), CPU).status == "too-large"  # small on cpu: never built full size


def test_an_audit_row_reads_as_a_check():
    over = TaskAudit("t", ("task",), error="ran past the 5 s limit", limit="timeout")
    assert TaskCheck.from_audit(over) == TaskCheck("t", "timeout", "ran past the 5 s limit")
    assert TaskCheck.from_audit(TaskAudit("u", ("task",), error="get_inputs() failed")).status == "error"
    assert TaskCheck.from_audit(TaskAudit("v", ("task",))).ok  # audited: degenerate or not, it runs


def test_checks_stream_to_jsonl_and_read_back_past_a_torn_line(tmp_path):
    path = tmp_path / "preflight.jsonl"
    append_check(path, TaskCheck("a", "ok", seconds=0.5))
    with path.open("a") as fh:
        fh.write('{"task_id": "b", "sta')  # a run killed mid-write
    append_check(path, TaskCheck("c", "oom", "out of memory", 2.0))
    assert read_checks(path) == {"a": TaskCheck("a", "ok", seconds=0.5),
                                 "c": TaskCheck("c", "oom", "out of memory", 2.0)}
    assert json.loads(path.read_text().splitlines()[-1])["status"] == "oom"


def test_a_status_outside_the_audits_names_is_refused():
    with pytest.raises(ValueError, match="status"):
        TaskCheck("t", "slow")
