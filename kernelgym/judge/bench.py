"""`kernelgym bench judge`: what one evaluation costs, phase by phase, and how stable speedups are."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field

from rich.table import Table

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.batch import judge_many
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin


def speedup_cv(speedups: list[float]) -> float | None:
    """Coefficient of variation of repeated speedups (None below two): the repeatability figure."""
    if len(speedups) < 2:
        return None
    return statistics.pstdev(speedups) / statistics.fmean(speedups)


@dataclass
class TaskBench:
    task_id: str
    statuses: list[str] = field(default_factory=list)
    phase_seconds: dict[str, list[float]] = field(default_factory=dict)
    speedups: list[float] = field(default_factory=list)
    answer_ms: list[float] = field(default_factory=list)

    def cv(self) -> float | None:
        return speedup_cv(self.speedups)


@dataclass
class JudgeBenchReport:
    device: str
    gpu_name: str
    repeats: int
    tasks: list[TaskBench]

    def to_dict(self) -> dict:
        return asdict(self) | {"cv": {t.task_id: t.cv() for t in self.tasks}}

    def table(self) -> Table:
        phases = sorted({p for t in self.tasks for p in t.phase_seconds})
        table = Table("task", "ok", *[f"{p} s" for p in phases], "speedup median", "speedup CV",
                      title=f"judge bench: {self.repeats} repeats on {self.gpu_name or self.device}")
        for t in self.tasks:
            row = [t.task_id, f"{t.statuses.count('ok')}/{len(t.statuses)}"]
            row += [f"{statistics.fmean(t.phase_seconds[p]):.3f}" if p in t.phase_seconds else "-" for p in phases]
            row.append(f"{statistics.median(t.speedups):.3f}" if t.speedups else "-")
            cv = t.cv()
            row.append(f"{cv:.1%}" if cv is not None else "-")
            table.add_row(*row)
        return table


def run_judge_bench(task_ids: list[str], repeats: int, config: JudgeConfig, jobs: int = 1) -> JudgeBenchReport:
    """Judge each task's built-in answer `repeats` times. With jobs > 1 evaluations overlap, but
    measurements never do (the per-GPU timing lock), so the spread is still that of honest timing."""
    device = config.resolved_device()
    pairs = [(load_builtin(tid)[0], builtin_answer_path(tid).read_text()) for tid in task_ids for _ in range(repeats)]
    results = judge_many(pairs, config, jobs=jobs)
    out, gpu = [], ""
    for i, tid in enumerate(task_ids):
        tb = TaskBench(tid)
        for r in results[i * repeats:(i + 1) * repeats]:
            gpu = r.gpu_name or gpu
            tb.statuses.append(r.status.value)
            for phase, s in r.phase_seconds.items():
                tb.phase_seconds.setdefault(phase, []).append(s)
            if r.speedup_eager is not None:
                tb.speedups.append(r.speedup_eager)
                tb.answer_ms.append(r.runtime.median_ms)
        out.append(tb)
    return JudgeBenchReport(device=device, gpu_name=gpu, repeats=repeats, tasks=out)
