"""Degenerate tasks in eval: flagged per task, out of the headline numbers unless kept."""

import json

from kernelgym.eval.metrics import evaluate
from kernelgym.eval.report import write_report
from kernelgym.eval.runner import RunFiles, screen_tasks
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import Status
from kernelgym.tasks.task import Task
from tests.eval.helpers import attempt
from tests.tasks import kernelbench_style as kb

ATTEMPTS = [attempt("real", 0, Status.WRONG_OUTPUT, level=1), attempt("zero", 0, eager=40.0, level=1)]


def test_degenerate_tasks_are_flagged_and_left_out_of_the_headline_by_default(tmp_path):
    m = evaluate(ATTEMPTS, turns=1, samples=1, degenerate=["zero"])
    assert m["overall"]["tasks"] == 1 and m["overall"]["correct_rate"] == 0.0  # no credit for "zero"
    assert {r["task_id"]: r["degenerate"] for r in m["tasks"]} == {"real": False, "zero": True}
    report = write_report(tmp_path, m, {"audited": True, "tasks": ["real", "zero"]}, ATTEMPTS).read_text()
    assert "`zero` (degenerate)" in report and "left out of every number above" in report


def test_keep_degenerate_counts_them_and_the_report_says_so(tmp_path):
    m = evaluate(ATTEMPTS, turns=1, samples=1, degenerate=["zero"], keep_degenerate=True)
    assert m["overall"]["tasks"] == 2 and m["overall"]["correct_rate"] == 0.5
    assert m["degenerate"]["in_headline"] and m["degenerate"]["tasks"] == ["zero"]
    report = write_report(tmp_path, m, {"audited": True, "tasks": ["real", "zero"]}, ATTEMPTS).read_text()
    assert "`zero` (degenerate)" in report and "counted in every number above" in report


def test_the_eval_audit_streams_rows_and_an_over_limit_task_does_not_stop_it(tmp_path):
    zero = Task("zero", kb.SCALE.replace("return x * 2.0 + 1.0", "return torch.zeros_like(x)"))
    tasks = [Task("huge", kb.HUGE_WEIGHT), zero, Task("scale", kb.SCALE)]
    files = RunFiles(tmp_path)
    screen = screen_tasks(tasks, files, JudgeConfig(device="cpu"), progress=False)
    assert screen.degenerate == ["zero"]
    assert {t: c.status for t, c in screen.over_limits.items()} == {"huge": "too-large"}  # not judged
    rows = [json.loads(line) for line in files.audit.read_text().splitlines()]
    assert [(r["task_id"], r["verdict"]) for r in rows] == [("huge", "too-large"), ("zero", "degenerate"),
                                                             ("scale", "ok")]


def test_the_preflight_screen_runs_tasks_at_once_with_a_row_each(tmp_path):
    # --screen-jobs: the preflight of KernelBench's 100 references one after another took ~10 minutes on a GPU
    tasks = [Task("huge", kb.HUGE_WEIGHT), Task("scale", kb.SCALE), Task("scale2", kb.SCALE)]
    files = RunFiles(tmp_path)
    screen = screen_tasks(tasks, files, JudgeConfig(device="cpu"), audit=False, progress=False, jobs=2)
    assert {t: c.status for t, c in screen.over_limits.items()} == {"huge": "too-large"}
    rows = [json.loads(line) for line in files.preflight.read_text().splitlines()]
    assert sorted(r["task_id"] for r in rows) == ["huge", "scale", "scale2"]
    again = screen_tasks(tasks, files, JudgeConfig(device="cpu"), audit=False, progress=False, jobs=2)
    assert again.over_limits.keys() == screen.over_limits.keys()  # resumed from the rows: nothing run twice
    assert len(files.preflight.read_text().splitlines()) == 3
