"""`kernelgym bench defences`: each defence is turned off through the judge's own switches, one run at a
time on the same batch, and the report compares each run with the all-on one."""

import json
import os

import pytest

from kernelgym.judge import JudgeConfig
from kernelgym.judge.candidate_env import CONFINE_VAR
from kernelgym.service import bench_defences
from kernelgym.service.bench import ModeReport
from kernelgym.service.bench_defences import DEFENCES, run_defence_bench
from kernelgym.service.bench_mix import build_mix


def _mode(statuses: list[str], wall: float) -> ModeReport:
    details = [{"kind": "correct", "task_id": f"t{i}", "status": s, "cpu_seconds": {"answer": 1.0, "replay": 2.0,
                "judge": 0.5, "answer_startup": 0.7}} for i, s in enumerate(statuses)]
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s] = counts.get(s, 0) + 1
    return ModeReport("service", len(statuses), wall, counts, [1.0] * len(statuses), [], None, None, details=details)


def test_each_defence_is_switched_off_alone_and_changes_are_reported(monkeypatch):
    seen = []

    def fake_run(tmp, items, overrides, device, jobs, warm, repeats, repeat_tasks, fork_server):
        seen.append((dict(overrides), os.environ.get(CONFINE_VAR), jobs, len(items)))
        off_static = overrides.get("static_checks") is False
        return _mode(["ok", "ok", "cheat" if not off_static else "ok"], 60.0 if not off_static else 30.0), []

    monkeypatch.delenv(CONFINE_VAR, raising=False)
    monkeypatch.setattr(bench_defences, "_service_run", fake_run)
    report = run_defence_bench(3, JudgeConfig(device="cpu", num_trials=2), jobs=4, off=["static", "confinement",
                                                                                        "profile"])
    # all on first and last (drift), one run per defence between; the GPU-only profile is skipped on a CPU
    assert [r.off for r in report.rows] == ["", "static", "confinement", ""]
    assert report.skipped == {"profile": "GPU only"}
    assert seen[0] == ({"num_trials": 2}, None, 4, 3)  # the caller's own settings ride along in every run
    assert seen[1][0] == {"num_trials": 2, "static_checks": False} and seen[1][1] is None
    assert seen[2][0] == {"num_trials": 2} and seen[2][1] == "0"  # confinement: the judge's environment switch
    assert os.environ.get(CONFINE_VAR) is None  # restored after the run
    static, confinement = report.rows[1], report.rows[2]
    assert static.changed == ["correct t2: cheat -> ok"] and confinement.changed == []
    assert static.mode.evals_per_min == 2 * report.all_on_rate and report.rows[3].changed == []
    assert report.rows[0].cpu_per_correct == 3.5  # answer + replay + judge; start-up is a part of answer
    table = report.table()
    assert table.row_count == 4 and "profile (GPU only)" in str(table.caption)
    json.dumps(report.to_dict())


def test_unknown_defences_are_refused_before_anything_runs(monkeypatch):
    monkeypatch.setattr(bench_defences, "_service_run", lambda *a: pytest.fail("ran"))
    with pytest.raises(ValueError, match="unknown defence"):
        run_defence_bench(2, JudgeConfig(device="cpu"), off=["static", "nope"])
    assert set(DEFENCES) >= {"static", "confinement", "precision", "replay"}


def test_confinement_off_reaches_the_candidates_on_a_real_batch():
    items = [it for it in build_mix(8, seed=0) if it.kind == "correct"][:2]
    report = run_defence_bench(len(items), JudgeConfig(device="cpu", num_trials=1, timeout_s=120), jobs=2,
                               off=["confinement"], items=items)
    on, off, again = report.rows
    assert again.mode.statuses == {"ok": 2} and again.changed == []
    assert on.mode.statuses == {"ok": 2} and off.mode.statuses == {"ok": 2} and off.changed == []
    layers_on = [layer for d in on.mode.details for layer in d["confinement"]]
    layers_off = [layer for d in off.mode.details for layer in d["confinement"]]
    if not layers_on:
        pytest.skip("no confinement layer on this machine")
    assert layers_off == []
    assert on.cpu_per_correct is not None and on.cpu_processes == ("answer", "judge", "replay")
