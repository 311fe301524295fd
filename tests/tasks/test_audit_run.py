"""Audits over task sets: every task a row, over-limit tasks included; rows streamed and resumable."""

import json

import pytest

from kernelgym.cli import main
from kernelgym.judge.config import JudgeConfig
from kernelgym.tasks.audit import AuditLog, audit_tasks
from kernelgym.tasks.limited import ChildLimits
from kernelgym.tasks.task import Task
from tests.tasks import kernelbench_style as kb

CPU = JudgeConfig(device="cpu")


def test_a_task_over_a_limit_is_a_row_and_the_run_goes_on():
    tasks = [Task("huge", kb.HUGE_WEIGHT), Task("hidden_allocation", kb.HIDDEN_ALLOCATION), Task("scale", kb.SCALE)]
    rows = []
    audits = audit_tasks(tasks, CPU, progress=False, limits=ChildLimits(memory_gb=4.0), on_audit=rows.append)
    assert [a.task_id for a in rows] == ["huge", "hidden_allocation", "scale"]
    verdicts = {a.task_id: a.verdict for a in audits}
    assert verdicts["huge"] == "too-large"
    assert verdicts["hidden_allocation"] == "oom", audits[1].error
    assert verdicts["scale"] == "ok"  # x * 2 + 1: no trivial output passes
    assert audits[2].small["level"] and audits[2].small["elements"] > 0


def test_audits_run_side_by_side_keep_the_tasks_order_and_every_row():
    # A ceiling, not a bet on the machine's speed (the timeout row has a test of its own, at any limit)
    tasks = [Task("hidden_allocation", kb.HIDDEN_ALLOCATION), Task("scale", kb.SCALE), Task("huge", kb.HUGE_WEIGHT)]
    rows = []
    audits = audit_tasks(tasks, CPU, progress=False, limits=ChildLimits(memory_gb=4.0, timeout_s=300),
                         on_audit=rows.append, jobs=2)
    assert [a.task_id for a in audits] == ["hidden_allocation", "scale", "huge"]
    assert sorted(a.task_id for a in rows) == ["hidden_allocation", "huge", "scale"]
    assert [a.verdict for a in audits] == ["oom", "ok", "too-large"]


def test_a_task_that_never_returns_is_a_timeout_row():
    (audit,) = audit_tasks([Task("hangs", kb.HANGS)], CPU, progress=False, limits=ChildLimits(timeout_s=3))
    assert audit.verdict == "timeout" and "limit" in audit.error


@pytest.fixture
def task_dir(tmp_path):
    directory = tmp_path / "tasks"
    directory.mkdir()
    for name in ("a_matmul", "b_scale", "c_conv3d"):
        source = {"a_matmul": kb.MATMUL, "b_scale": kb.SCALE, "c_conv3d": kb.CONV3D}[name]
        (directory / f"{name}.py").write_text(source)
    return directory


def test_an_interrupted_audit_leaves_its_rows_and_resume_skips_them(task_dir, tmp_path, capsys):
    from kernelgym.tasks.loaders import load_task_dir

    out = tmp_path / "audit.jsonl"
    log = AuditLog(out)
    log.start()

    def stop_after_first(audit):
        log.append(audit)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        audit_tasks(load_task_dir(task_dir), CPU, progress=False, on_audit=stop_after_first)
    first = out.read_text().splitlines()
    assert [json.loads(line)["task_id"] for line in first] == ["a_matmul"]
    with out.open("a") as fh:
        fh.write('{"task_id": "b_sca')  # a run killed mid-write

    main(["tasks", "audit", str(task_dir), "--json-out", str(out), "--resume"])
    assert "resuming: 1 of 3 tasks already audited" in capsys.readouterr().out
    lines = out.read_text().splitlines()
    assert lines[0] == first[0]  # the done task was not audited again
    assert [json.loads(line)["task_id"] for line in lines] == ["a_matmul", "b_scale", "c_conv3d"]


def test_retry_limits_audits_again_only_the_rows_that_hit_a_limit(task_dir, tmp_path, capsys):
    out = tmp_path / "audit.jsonl"
    main(["tasks", "audit", str(task_dir), "--json-out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["verdict"] for r in rows] != ["oom"] * 3
    rows[1] = {**rows[1], "verdict": "oom", "limit": "oom", "error": "CUDA out of memory (another task held it)"}
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    main(["tasks", "audit", str(task_dir), "--json-out", str(out), "--resume", "--retry-limits"])
    again = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["task_id"] for r in again] == ["a_matmul", "c_conv3d", "b_scale"]  # one row per task
    assert again[0] == rows[0] and again[1] == rows[2]
    assert again[2]["limit"] is None and again[2]["verdict"] == "ok"
    assert main(["tasks", "audit", str(task_dir), "--json-out", str(out), "--retry-limits"]) == 2
    assert "--retry-limits goes with --resume" in capsys.readouterr().err
