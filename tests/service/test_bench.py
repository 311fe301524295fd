"""`kernelgym bench service` end to end on the CPU: both modes judge the same batch to the verdicts
its kinds stand for, and the report's numbers are derived from what happened."""

from kernelgym.judge import JudgeConfig
from kernelgym.service.bench import _busy_share, run_service_bench


def test_service_and_baseline_judge_the_same_batch(tmp_path):
    report = run_service_bench(4, JudgeConfig(device="cpu", num_trials=1, timeout_s=120), jobs=2, warm=1,
                               baseline=True, repeats=0, repeat_tasks=())
    service, baseline = report.modes
    for mode in (service, baseline):
        assert mode.n == 4 and sum(mode.statuses.values()) == 4
        assert mode.unexpected == []
        assert mode.statuses == {"ok": 2, "wrong_output": 1, "compile_error": 1} or "runtime_error" in mode.statuses
        assert mode.wall_s > 0 and mode.evals_per_min > 0 and len(mode.latencies_s) == 4
        assert mode.busy_share is None and mode.kernel_busy_share is None  # nothing is measured on a CPU
        assert mode.window[0] < mode.window[1]
    assert report.to_dict()["modes"][0]["evals_per_min"] == service.evals_per_min
    # the service's clock starts once its warm pool is full; the baseline has none
    assert service.warmup_s is not None and baseline.warmup_s is None
    (pool,) = service.pools
    assert pool["fork_server"] is not None and pool["handed_out"] >= 1
    # host CPU per evaluation, read from /proc by the parent (the eighth session's GPU bench lost it on the way)
    judged = [d["cpu_seconds"] for d in service.details if d["status"] == "ok"]
    assert judged and all(c.get("answer", 0) > 0 and c.get("replay", 0) > 0 for c in judged), judged
    # of which start-up, for processes the warm pool started ahead: part of the total, never more
    warm = [c for c in judged if "answer_startup" in c]
    assert all(0 < c["answer_startup"] <= c["answer"] for c in warm), warm
    assert "cpu_answer" in service.phase_medians()["correct"]
    # the judging process's own threads over the batch (one GIL for every evaluation in flight there) and the
    # trusted thread's CPU per evaluation: what says whether the judging process, not the device, is the bound
    assert set(service.worker_cpu_share) == {"cpu"} and service.worker_cpu_share["cpu"] > 0
    assert baseline.worker_cpu_share == {} and service.load_avg is not None
    assert service.phase_medians()["correct"]["cpu_judge"] > 0


def test_busy_share_is_the_union_of_holds(tmp_path):
    log = tmp_path / "busy.log"
    log.write_text("10 12\n11 13\n20 21\n")  # overlapping holds count once
    assert _busy_share(log, 10.0, 30.0) == (3 + 1) / 20
    assert _busy_share(tmp_path / "missing.log", 0.0, 1.0) is None


def test_shared_holds_count_only_towards_the_held_share(tmp_path):
    log = tmp_path / "busy.log"
    log.write_text("10 12 x\n11 15 s\n20 21 s\n")
    assert _busy_share(log, 10.0, 30.0) == 2 / 20  # measurements only
    assert _busy_share(log, 10.0, 30.0, ("x", "s")) == (5 + 1) / 20


def test_phase_medians_are_per_kind_with_trials_run():
    from kernelgym.service.bench import ModeReport, ServiceBenchReport

    details = [
        {"kind": "correct", "trials": 7, "phase_seconds": {"correctness": 1.0, "gpu_wait": 0.2}},
        {"kind": "correct", "trials": 7, "phase_seconds": {"correctness": 3.0, "gpu_wait": 0.4}},
        {"kind": "correct", "trials": 7, "phase_seconds": {"correctness": 2.0}},  # never waited: counts as 0
        {"kind": "wrong_output", "trials": 1, "phase_seconds": {"correctness": 0.5}},
    ]
    mode = ModeReport("service", 4, 10.0, {}, [1.0] * 4, [], None, None, details=details)
    med = mode.phase_medians()
    assert med["correct"] == {"correctness": 2.0, "gpu_wait": 0.2, "trials": 7}
    assert med["wrong_output"] == {"correctness": 0.5, "trials": 1}
    report = ServiceBenchReport("cpu", "", [mode], [])
    assert report.to_dict()["modes"][0]["phase_medians"] == med
    assert len(report.tables()) == 2  # the throughput table and the phase table
