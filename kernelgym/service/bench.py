"""`kernelgym bench service`: the service against spawn-per-candidate judging, on the same batch.

Three measurements in one run:
1. **service**: the mixed batch (`bench_mix`) through `Service` over the embedded `LocalBackend`
   (warm workers, candidates overlapped, reference timings cached for the run);
2. **baseline**: the same batch judged the way the reference system does it: one candidate at a
   time, a fresh process each, the reference re-timed every time, no cache;
3. **repeatability**: each of a few correct answers judged `repeats` times through the service
   (speedup CV), and its runtime compared with `triton.testing.do_bench` on the same GPU.

Every item carries its own judge seed, so the store's content cache never serves a repeat.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from kernelgym.judge.bench import speedup_cv
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.result import EvalResult
from kernelgym.judge.proc_cpu import process_cpu_seconds
from kernelgym.judge.timing import BUSY_LOG_VAR
from kernelgym.service.bench_mix import MixItem, build_mix
from kernelgym.service.gpu_utilization import UtilizationSampler
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin
from kernelgym.tasks.task import Task


@dataclass
class ModeReport:
    """One way of judging the batch."""

    mode: str
    n: int
    wall_s: float
    statuses: dict[str, int]
    latencies_s: list[float] = field(repr=False)
    unexpected: list[str]  # items whose verdict was not the one their kind stands for
    crash_cost_s: float | None  # median evaluation time of a crashing answer
    busy_share: float | None  # share of the wall time some GPU was held for a measurement
    held_share: float | None = None  # share of the wall time some GPU was held at all (measurements or kernel work)
    details: list[dict[str, Any]] = field(default_factory=list, repr=False)  # per answer: kind, status, phases
    pools: list[dict[str, Any]] = field(default_factory=list, repr=False)  # each worker's warm pool stats at the end
    window: tuple[float, float] = field(default=(0.0, 0.0), repr=False)  # time.time() of the clock's start and end
    warmup_s: float | None = None  # service only: filling the warm pools after the workers were up (not in wall_s)
    kernel_busy_share: float | None = None  # the driver's share of the wall time a kernel ran (nvidia-smi)
    # service only, per worker process: its own threads' CPU seconds over the wall (1.0: one core busy all the
    # time). A worker's Python runs under one GIL, so near 1.0 the judging process, not the GPU, is the bound
    worker_cpu_share: dict[str, float] = field(default_factory=dict)
    load_avg: float | None = None  # the host's 1-minute load average at the end of the batch

    @property
    def evals_per_min(self) -> float:
        return 60.0 * self.n / self.wall_s if self.wall_s > 0 else 0.0

    def percentile(self, q: float) -> float:
        xs = sorted(self.latencies_s)
        return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else 0.0

    def phase_medians(self) -> dict[str, dict[str, float]]:
        """Per answer kind, the median seconds of each judge phase and of the trials run: where an
        evaluation's time goes under load (`gpu_wait`: queued behind measurements), kind by kind."""
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for d in self.details:
            by_kind.setdefault(d["kind"], []).append(d)
        out: dict[str, dict[str, float]] = {}
        for kind, rows in by_kind.items():
            phases = sorted({p for r in rows for p in r.get("phase_seconds") or {}})
            med = {p: statistics.median((r.get("phase_seconds") or {}).get(p, 0.0) for r in rows) for p in phases}
            med["trials"] = statistics.median(r.get("trials", 0) for r in rows)
            for proc in sorted({q for r in rows for q in r.get("cpu_seconds") or {}}):  # host CPU, not wall
                med[f"cpu_{proc}"] = statistics.median((r.get("cpu_seconds") or {}).get(proc, 0.0) for r in rows)
            out[kind] = med
        return out


@dataclass
class RepeatRow:
    task_id: str
    speedups: list[float]
    answer_ms: list[float]
    do_bench_ms: float | None
    runtimes: list[dict[str, float]] = field(default_factory=list, repr=False)  # per evaluation: RuntimeStats

    @property
    def cv(self) -> float | None:
        return speedup_cv(self.speedups)


@dataclass
class ServiceBenchReport:
    device: str
    gpu_name: str
    modes: list[ModeReport]
    repeats: list[RepeatRow]

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for m, md in zip(self.modes, d["modes"]):
            md.update(evals_per_min=m.evals_per_min, p50_latency_s=m.percentile(0.5), p95_latency_s=m.percentile(0.95),
                      phase_medians=m.phase_medians())
        for r, rd in zip(self.repeats, d["repeats"]):
            rd["cv"] = r.cv
        return d

    def tables(self) -> list[Table]:
        t = Table("mode", "answers", "warm-up s", "wall s", "evals/min", "p50 latency s", "p95 latency s", "GPU timing-busy",
                  "GPU held", "GPU kernel-busy", "crash cost s", "unexpected verdicts", "worker CPU", "load", title=f"service bench on {self.gpu_name or self.device}")
        for m in self.modes:
            t.add_row(m.mode, str(m.n), _f(m.warmup_s, ".1f"), f"{m.wall_s:.1f}", f"{m.evals_per_min:.1f}", f"{m.percentile(0.5):.1f}",
                      f"{m.percentile(0.95):.1f}", "-" if m.busy_share is None else f"{m.busy_share:.0%}",
                      "-" if m.held_share is None else f"{m.held_share:.0%}", _f(m.kernel_busy_share, ".0%"),
                      "-" if m.crash_cost_s is None else f"{m.crash_cost_s:.2f}", str(len(m.unexpected)),
                      " ".join(f"{v:.0%}" for v in m.worker_cpu_share.values()) or "-", _f(m.load_avg, ".1f"))
        out = [t, self._phase_table(self.modes[0])] if self.modes and self.modes[0].details else [t]
        if len(self.modes) == 2 and self.modes[1].evals_per_min > 0:
            t.caption = f"service / baseline throughput: {self.modes[0].evals_per_min / self.modes[1].evals_per_min:.1f}x"
        if self.repeats:
            r = Table("task", "evaluations", "speedup median", "speedup CV", "answer ms median", "do_bench ms",
                      "judge / do_bench", title="timing repeatability")
            for row in self.repeats:
                med = statistics.median(row.answer_ms) if row.answer_ms else None
                ratio = med / row.do_bench_ms if med and row.do_bench_ms else None
                r.add_row(row.task_id, str(len(row.speedups)),
                          f"{statistics.median(row.speedups):.3f}" if row.speedups else "-",
                          f"{row.cv:.1%}" if row.cv is not None else "-", _f(med, ".3f"), _f(row.do_bench_ms, ".3f"),
                          _f(ratio, ".2f"))
            out.append(r)
        return out


    @staticmethod
    def _phase_table(mode: ModeReport) -> Table:
        medians = mode.phase_medians()
        kinds = sorted(medians)
        t = Table("phase", *kinds, title=f"{mode.mode.split()[0]}: median seconds per phase, by answer kind")
        for phase in sorted({p for m in medians.values() for p in m} - {"trials"}) + ["trials"]:
            t.add_row(phase, *(_f(medians[k].get(phase), ".3g" if phase != "trials" else ".0f") for k in kinds))
        return t


def run_service_bench(n: int, config: JudgeConfig, jobs: int = 8, warm: int | None = None, baseline: bool = True,
                      repeats: int = 10, repeat_tasks: tuple[str, ...] = ("relu", "softmax", "matmul_square"),
                      seed: int = 0, fork_server: bool = True, items: list[MixItem] | None = None,
                      workers_per_device: int = 1) -> ServiceBenchReport:
    """Judge a mixed batch of `n` answers through the service (and, with `baseline`, one at a time
    in fresh processes), then `repeats` evaluations of each of `repeat_tasks`' built-in answers.
    `fork_server`: the service's warm candidates are forked (False: each a new interpreter).
    `items`: another batch than `build_mix(n)`, such as `build_training_mix` (its tasks travel as
    source with each request). `workers_per_device`: worker processes per device, `jobs` in flight each."""
    device = config.resolved_device()
    defaults = asdict(JudgeConfig())
    overrides = {k: v for k, v in asdict(config).items() if k not in ("device", "seed") and v != defaults[k]}
    items = build_mix(n, seed=seed) if items is None else items
    with tempfile.TemporaryDirectory(prefix="kernelgym-bench-") as tmp, UtilizationSampler() as gpu_use:
        service_mode, repeat_results = _service_run(Path(tmp), items, overrides, device, jobs, warm,
                                                    repeats, repeat_tasks, fork_server, workers_per_device)
        modes = [service_mode]
        if baseline:
            modes.append(_baseline_run(Path(tmp), items, config, device))
    if device != "cpu":
        for m in modes:
            m.kernel_busy_share = gpu_use.share(m.window[0], m.window[1])
    gpu = next((r.gpu_name for r in repeat_results if r.gpu_name), "")
    rows = [_repeat_row(tid, [r for r in repeat_results if r.task_id == tid], device) for tid in repeat_tasks]
    return ServiceBenchReport(device=device, gpu_name=gpu, modes=modes, repeats=rows)


def _service_run(tmp: Path, items: list[MixItem], overrides: dict[str, Any], device: str, jobs: int, warm: int | None,
                 repeats: int, repeat_tasks: tuple[str, ...], fork_server: bool,
                 workers_per_device: int = 1) -> tuple[ModeReport, list[EvalResult]]:
    from kernelgym.service.local_backend import LocalBackend, LocalBackendConfig
    from kernelgym.service.service import Service
    from kernelgym.service.store import Store

    busy_log = tmp / "busy_service.log"
    env = {BUSY_LOG_VAR: str(busy_log), "KERNELGYM_CACHE_DIR": str(tmp / "cache")}  # inherited by the workers
    with _environ(env):
        devices = (device,) if device != "cuda" else ()
        backend = LocalBackend(LocalBackendConfig(devices=devices, jobs_per_worker=jobs, warm_pool_size=warm,
                                                  fork_server=fork_server, judge_config=overrides,
                                                  workers_per_device=workers_per_device))
        service = Service(backend, Store(tmp / "bench.db")).start()
        try:
            # The steady state: a long-running service has its warm pools full; filling them is
            # start-up (reported as `warmup_s`), like the worker start it follows.
            w0 = time.time()
            backend.wait_warm(300)
            warmup_s = time.time() - w0
            requests = [{"task_id": it.task_id, "answer": it.answer, "config": {"seed": 10_000 + i},
                         **({"task_source": it.task_source} if it.task_source is not None else {})}
                        for i, it in enumerate(items)]
            pids = {w["name"]: w["pid"] for w in backend.stats()["workers"] if w.get("pid")}
            # the workers' own threads only: the candidates are the fork server's children, not theirs
            cpu0 = {name: process_cpu_seconds(pid, children=False) for name, pid in pids.items()}
            t0 = time.time()
            submission = service.submit(requests)
            records = service.wait(submission.ids)
            t1 = max((r.finished_at or time.time()) for r in records)
            cpu1, t_cpu = {name: process_cpu_seconds(pid, children=False) for name, pid in pids.items()}, time.time()
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
            results = [r.result for r in records]
            mode = _mode_report("service", items, results, [(r.finished_at or t1) - r.created_at for r in records],
                                t1 - t0, _busy_share(busy_log, t0, t1), _busy_share(busy_log, t0, t1, ("x", "s")))
            mode.window = (t0, t1)
            mode.pools = [w["pool"] for w in backend.stats()["workers"] if w.get("pool")]
            mode.warmup_s = warmup_s
            mode.load_avg = load
            mode.worker_cpu_share = {name: round((cpu1[name] - cpu0[name]) / (t_cpu - t0), 3) for name in pids
                                     if cpu0.get(name) is not None and cpu1.get(name) is not None}
            reps = [{"task_id": tid, "answer": builtin_answer_path(tid).read_text(), "config": {"seed": 20_000 + k}}
                    for tid in repeat_tasks for k in range(repeats)]
            repeat_results = [r.result for r in service.wait(service.submit(reps).ids)] if reps else []
        finally:
            service.close()
    return mode, repeat_results


def _baseline_run(tmp: Path, items: list[MixItem], config: JudgeConfig, device: str) -> ModeReport:
    """One at a time, fresh process per candidate (no warm pool in this process), reference
    timings re-measured for every answer (both caches emptied before each)."""
    from dataclasses import replace

    from kernelgym.judge import reference

    busy_log = tmp / "busy_baseline.log"
    results, latencies = [], []
    t0 = time.time()
    for i, it in enumerate(items):
        with _environ({BUSY_LOG_VAR: str(busy_log), "KERNELGYM_CACHE_DIR": str(tmp / f"nocache{i}")}):
            reference._TIMING_CACHE.clear()
            task = load_builtin(it.task_id)[0] if it.task_source is None else Task(it.task_id, it.task_source)
            results.append(judge(task, it.answer, replace(config, device=device, seed=10_000 + i)))
        latencies.append(time.time() - t0)
    t1 = time.time()
    mode = _mode_report("baseline (spawn per candidate, one at a time, no cache)", items, results, latencies,
                        t1 - t0, _busy_share(busy_log, t0, t1), _busy_share(busy_log, t0, t1, ("x", "s")))
    mode.window = (t0, t1)
    return mode


def _mode_report(mode: str, items: list[MixItem], results: list[EvalResult | None], latencies: list[float],
                 wall: float, busy: float | None, held: float | None = None) -> ModeReport:
    statuses: dict[str, int] = {}
    unexpected, crash_costs, details = [], [], []
    for it, r in zip(items, results):
        status = r.status.value if r is not None else "missing"
        statuses[status] = statuses.get(status, 0) + 1
        if status not in it.expected:
            unexpected.append(f"{it.kind} {it.task_id}: {status} ({r.message[:120] if r else ''})")
        if it.kind == "crash" and r is not None:
            crash_costs.append(r.wall_seconds)
        details.append({"kind": it.kind, "task_id": it.task_id, "status": status, "trials": len(r.trials) if r else 0,
                        "profiled": r is not None and r.profile is not None, "transfer": r.transfer if r else "",
                        "wall_seconds": r.wall_seconds if r else None, "phase_seconds": r.phase_seconds if r else {},
                        "cpu_seconds": r.cpu_seconds if r else {},
                        "confinement": list(r.confinement) if r else []})
    return ModeReport(mode=mode, n=len(items), wall_s=wall, statuses=statuses, latencies_s=latencies,
                      unexpected=unexpected, crash_cost_s=statistics.median(crash_costs) if crash_costs else None,
                      busy_share=busy, held_share=held, details=details)


def _busy_share(log: Path, t0: float, t1: float, kinds: tuple[str, ...] = ("x",)) -> float | None:
    """Union of the holds of `kinds` logged between t0 and t1, over t1 - t0 (None: nothing
    logged, e.g. on CPU where nothing is locked). `x`: measurements (lines without a kind are
    measurements too), `s`: shared kernel work (trials, reference outputs, comparisons)."""
    if not log.exists() or t1 <= t0:
        return None
    spans = []
    for line in log.read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2 and (fields[2] if len(fields) > 2 else "x") in kinds:
            spans.append((max(t0, float(fields[0])), min(t1, float(fields[1]))))
    covered, end = 0.0, t0
    for a, b in sorted(spans):
        if b <= end:
            continue
        covered += b - max(a, end)
        end = b
    return covered / (t1 - t0)


def _repeat_row(task_id: str, results: list[EvalResult], device: str) -> RepeatRow:
    ok = [r for r in results if r.ok and r.speedup_eager is not None and r.runtime is not None]
    return RepeatRow(task_id, [r.speedup_eager for r in ok], [r.runtime.median_ms for r in ok],
                     _do_bench_ms(task_id, device) if ok and device != "cpu" else None,
                     [asdict(r.runtime) for r in ok])


def _do_bench_ms(task_id: str, device: str) -> float | None:
    """The built-in answer (trusted code of ours) timed by `triton.testing.do_bench` on the task's inputs."""
    import torch
    import triton.testing

    from kernelgym.judge.inputs import make_init_inputs, make_inputs

    module = load_builtin(task_id)[0].load_module("full")
    spec = importlib.util.spec_from_file_location(f"kernelgym_bench_{task_id}", builtin_answer_path(task_id))
    answer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(answer)
    model = answer.ModelNew(*make_init_inputs(module, 0)).to(device)
    inputs = make_inputs(module, 1, "task", device)
    # do_bench's events go to the current device, which is GPU 0 in a new thread whatever `device` says
    with torch.no_grad(), torch.cuda.device(device):
        return float(triton.testing.do_bench(lambda: model(*inputs), warmup=25, rep=100))


class _environ:
    """Set environment variables for a block (worker processes started inside inherit them)."""

    def __init__(self, values: dict[str, str]) -> None:
        self.values, self.saved = values, {}

    def __enter__(self) -> None:
        self.saved = {k: os.environ.get(k) for k in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc: object) -> None:
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _f(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)
