"""Judge many (task, answer) pairs concurrently with a progress bar.

Each evaluation already runs its candidate in its own child process; threads here only overlap
those children (compilation and correctness in parallel, timing serialised by `timing_lock`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.task import Task, TaskError


def default_jobs() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def judge_many(pairs: Sequence[tuple[Task, str | bytes]], config: JudgeConfig, jobs: int | None = None,
               progress: bool = True, on_result: Callable[[EvalResult], None] | None = None) -> list[EvalResult]:
    """Results in the order of `pairs`. A broken task gives a result with fault `task_error`,
    so one bad task never loses the other results."""
    device = config.resolved_device()
    config = JudgeConfig.from_dict({**config.__dict__, "device": device})
    jobs = jobs or default_jobs()
    results: list[EvalResult | None] = [None] * len(pairs)
    columns = (TextColumn("[bold]judging"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, disable=not progress, transient=False) as bar, ThreadPoolExecutor(jobs) as pool:
        task_bar = bar.add_task("judging", total=len(pairs))
        futures = {pool.submit(_judge_one, t, a, config): i for i, (t, a) in enumerate(pairs)}
        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if on_result is not None:
                on_result(results[futures[fut]])  # e.g. append to a JSONL file: nothing lost if interrupted
            bar.advance(task_bar)
    return [r for r in results if r is not None]


def _judge_one(task: Task, answer: str | bytes, config: JudgeConfig) -> EvalResult:
    try:
        return judge(task, answer, config)
    except TaskError as e:
        return EvalResult(status=Status.RUNTIME_ERROR, task_id=task.task_id, message=f"task error: {e}", fault="task_error",
                          error=str(e), device=config.device)
