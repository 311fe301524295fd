"""Tasks over limits in eval: the audit (or, with --no-audit, the preflight) runs each task's
reference in a limited child first; a task that hangs or takes too much memory is a row of the
report with its status, gets no answer, counts in no number, and the other tasks are judged."""

import json

import pytest

from kernelgym.cli import main
from kernelgym.eval.metrics import evaluate
from kernelgym.eval.report import write_report
from kernelgym.judge.result import Status
from kernelgym.tasks.preflight import TaskCheck
from tests.eval.helpers import attempt
from tests.tasks import kernelbench_style as kb

pytestmark = pytest.mark.timeout(300)


def test_a_task_over_limits_is_a_row_and_counts_nowhere_else(tmp_path):
    # "hangs" has a verdict from an earlier run: it still counts nowhere once its row says timeout.
    attempts = [attempt("real", 0, Status.WRONG_OUTPUT, level=1), attempt("hangs", 0, level=1)]
    over = {"hangs": TaskCheck("hangs", "timeout", "ran past the 20 s limit and was killed", 20.1)}
    m = evaluate(attempts, turns=1, samples=1, over_limits=over)
    assert m["overall"]["tasks"] == 1 and m["overall"]["correct_rate"] == 0.0
    assert m["over_limits"] == [over["hangs"].to_dict()]
    rows = {r["task_id"]: (r["samples"], r["best_status"], r["over_limits"]) for r in m["tasks"]}
    assert rows == {"hangs": (0, "over limits: timeout", "timeout"), "real": (1, "wrong_output", None)}
    report = write_report(tmp_path, m, {"audited": False, "tasks": ["real", "hangs"]}, attempts).read_text()
    assert "## Tasks not judged" in report and "(preflight)" in report
    assert "| `hangs` | over limits: timeout | 20.1 | ran past the 20 s limit and was killed |" in report


@pytest.fixture
def limit_tasks(tmp_path):
    directory = tmp_path / "limits"
    directory.mkdir()
    (directory / "hangs.py").write_text(kb.HANGS)
    (directory / "hidden_allocation.py").write_text(kb.HIDDEN_ALLOCATION)  # 64 GB in forward
    return directory


def eval_args(api_base, limit_tasks, out, *extra):
    return ["eval", "--model", "scripted", "--api-base", api_base, "--tasks", f"relu,{limit_tasks}",
            "--judge-devices", "cpu", "--trials", "1", "--timeout", "120", "--task-timeout", "20",
            "--memory-gb", "4", "--out", str(out), "--no-progress", *extra]


@pytest.mark.parametrize("screen", ["audit", "preflight"])
def test_eval_judges_the_other_tasks_and_resumes_without_screening_again(scripted_endpoint, limit_tasks, tmp_path,
                                                                         screen):
    api_base, model = scripted_endpoint
    out = tmp_path / "run"
    extra = () if screen == "audit" else ("--no-audit",)
    assert main(eval_args(api_base, limit_tasks, out, *extra)) == 0
    assert model.requests == [("relu", 1, 1)]  # no answer asked for a task over limits
    m = json.loads((out / "metrics.json").read_text())
    assert m["overall"]["tasks"] == 1 and m["overall"]["correct_rate"] == 1.0
    assert {r["task_id"]: r["best_status"] for r in m["tasks"]} == {
        "relu": "ok", "hangs": "over limits: timeout", "hidden_allocation": "over limits: oom"}
    report = (out / "report.md").read_text()
    assert "## Tasks not judged" in report and f"({screen})" in report and "2 task(s) were not judged" in report
    rows = out / f"{screen}.jsonl"
    assert sorted(json.loads(line)["task_id"] for line in rows.read_text().splitlines()) == [
        "hangs", "hidden_allocation", "relu"]

    # Resumed: nothing generated, judged or screened again; the same numbers.
    before, results = rows.read_text(), (out / "results.jsonl").read_text()
    model.requests.clear()
    assert main(eval_args(api_base, limit_tasks, out, *extra)) == 0
    assert model.requests == [] and rows.read_text() == before and (out / "results.jsonl").read_text() == results
    assert json.loads((out / "metrics.json").read_text()) == m
    assert main(["eval", "--report-only", "--out", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text()) == m
