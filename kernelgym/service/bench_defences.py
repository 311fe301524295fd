"""`kernelgym bench defences`: what each defence of the judge costs, measured on one batch.

The principle (DESIGN.md): every defence has a measured cost. This runs the service bench's mixed batch
(`bench_mix`) through the embedded service once with every defence on, then once per defence turned off,
same answers, same per-answer seeds, same concurrency, and reports for each: evaluations per minute against
all-on, p50 latency, host CPU per correct evaluation, and the verdicts that changed (with the seeds fixed, a
changed verdict is what the defence decided in this batch, or timing noise on a GPU for the timeout items).

A defence is turned off through the judge's own switches only (`JudgeConfig` fields, the judge's
environment); nothing here changes how the judge works when it is on.
"""

from __future__ import annotations

import statistics
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.table import Table

from kernelgym.judge.candidate_env import CONFINE_VAR
from kernelgym.judge.config import JudgeConfig
from kernelgym.service.bench import ModeReport, _environ, _service_run
from kernelgym.service.bench_mix import MixItem, build_mix


@dataclass(frozen=True)
class Defence:
    """How to turn one defence off: `JudgeConfig` overrides and/or judge environment variables."""

    guards: str
    config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    gpu_only: bool = False


DEFENCES: dict[str, Defence] = {
    "static": Defence("capability bans and AST threat rules, before anything runs", config={"static_checks": False}),
    "confinement": Defence("OS confinement of the answer's and the replay's processes", env={CONFINE_VAR: "0"}),
    "precision": Defence("tolerances derived from a float64 reference (off: flat dtype tolerances)",
                         config={"precision": "flat"}),
    "profile": Defence("the profiler's share of the answer's own kernels (RH-03)", config={"profile": False},
                       gpu_only=True),
    "replay": Defence("verdicts from a trusted replay of the recorded launches (off: the in-process judge)",
                      config={"engine": "inprocess"}),
}


@dataclass
class DefenceRow:
    """One run of the batch: `off` is the defence turned off ("" for every defence on)."""

    off: str
    mode: ModeReport
    changed: list[str] = field(default_factory=list)  # "kind task: status with all on -> status here"

    @property
    def cpu_processes(self) -> tuple[str, ...]:
        """The processes whose host CPU the evaluations reported (`answer`, `replay`, `judge`; the in-process
        judge reports its trusted side only)."""
        return tuple(sorted({k for d in self.mode.details for k in d.get("cpu_seconds") or {} if _top_level(k)}))

    @property
    def cpu_per_correct(self) -> float | None:
        """Median host CPU seconds, summed over `cpu_processes`, of the answers whose verdict is `ok`."""
        sums = [sum(v for k, v in d["cpu_seconds"].items() if _top_level(k)) for d in self.mode.details
                if d.get("status") == "ok" and d.get("cpu_seconds")]
        return statistics.median(sums) if sums else None


def _top_level(key: str) -> bool:
    """`answer`, `replay`, `judge`: a process's total; `answer.record`, `judge_compare`, `answer_startup` are parts."""
    return "." not in key and "_" not in key


@dataclass
class DefenceBenchReport:
    device: str
    jobs: int
    rows: list[DefenceRow]
    skipped: dict[str, str] = field(default_factory=dict)  # defence -> why it was not run

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "jobs": self.jobs, "skipped": self.skipped,
                "rows": [{"off": r.off, "evals_per_min": r.mode.evals_per_min, "p50_latency_s": r.mode.percentile(0.5),
                          "cpu_per_correct_s": r.cpu_per_correct, "statuses": r.mode.statuses, "changed": r.changed,
                          "mode": asdict(r.mode)} for r in self.rows]}

    @property
    def all_on_rate(self) -> float:
        """Evaluations per minute with every defence on: the mean of the first and the last run (the batch runs
        all-on before and after the others, so that a drift of the machine over the runs shows and cancels)."""
        rates = [r.mode.evals_per_min for r in self.rows if not r.off]
        return sum(rates) / len(rates) if rates else 0.0

    def table(self) -> Table:
        base = self.all_on_rate
        t = Table("defence off", "what it guards", "evals/min", "vs all on", "p50 s", "CPU s per ok", "verdicts changed",
                  title=f"cost of each defence on {self.device}, {self.jobs} in flight, "
                        f"{self.rows[0].mode.n if self.rows else 0} answers")
        procs = self.rows[0].cpu_processes if self.rows else ()
        for r in self.rows:
            rate, cpu = r.mode.evals_per_min, r.cpu_per_correct
            cpu_text = "-" if cpu is None else f"{cpu:.2f}"
            if cpu is not None and r.cpu_processes != procs:  # not comparable: say what was counted
                cpu_text += f" ({'+'.join(r.cpu_processes)} only)"
            t.add_row(r.off or "(none: every defence on)", DEFENCES[r.off].guards if r.off else
                      ("first run" if r is self.rows[0] else "last run, against drift"),
                      f"{rate:.1f}", "-" if not r.off or base <= 0 else f"{rate / base - 1:+.0%}",
                      f"{r.mode.percentile(0.5):.1f}", cpu_text, "-" if r is self.rows[0] else str(len(r.changed)))
        if self.skipped:
            t.caption = "not run: " + "; ".join(f"{k} ({v})" for k, v in self.skipped.items())
        return t


def run_defence_bench(n: int, config: JudgeConfig, jobs: int = 8, off: list[str] | None = None, seed: int = 0,
                      items: list[MixItem] | None = None) -> DefenceBenchReport:
    """The batch with every defence on, then once with each defence of `off` (default: all of `DEFENCES`)
    turned off, then with every defence on again. Raises ValueError for a name `DEFENCES` does not have."""
    names = list(DEFENCES) if off is None else list(off)
    unknown = [x for x in names if x not in DEFENCES]
    if unknown:
        raise ValueError(f"unknown defence(s) {', '.join(unknown)}; known: {', '.join(DEFENCES)}")
    device = config.resolved_device()
    items = build_mix(n, seed=seed) if items is None else items
    defaults = asdict(JudgeConfig())
    base = {k: v for k, v in asdict(config).items() if k not in ("device", "seed") and v != defaults[k]}
    skipped = {x: "GPU only" for x in names if DEFENCES[x].gpu_only and device == "cpu"}
    runs = [""] + [x for x in names if x not in skipped] + [""]
    rows = []
    for name in runs:
        defence = DEFENCES[name] if name else Defence("")
        with tempfile.TemporaryDirectory(prefix="kernelgym-defences-") as tmp, _environ(defence.env):
            mode, _ = _service_run(Path(tmp), items, {**base, **defence.config}, device, jobs, None, 0, (), True)
        mode.mode = name or "all on"
        rows.append(DefenceRow(name, mode))
    first = rows[0].mode.details
    for row in rows[1:]:  # the last all-on run's changes are the batch's own noise (timeouts near the limit)
        row.changed = [f"{a['kind']} {a['task_id']}: {a['status']} -> {b['status']}"
                       for a, b in zip(first, row.mode.details) if a["status"] != b["status"]]
    return DefenceBenchReport(device=device, jobs=jobs, rows=rows, skipped=skipped)
