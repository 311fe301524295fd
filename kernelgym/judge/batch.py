"""Judge many (task, answer) pairs concurrently with a progress bar.

Each evaluation already runs its candidate in its own child process; threads here only overlap
those children (compilation and correctness in parallel, a measurement has its GPU to itself: `timing.gpu_lock`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor, as_completed

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kernelgym.interrupt import Interrupted, cancel_pool
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.task import Task, TaskError


def default_jobs() -> int:
    return max(1, min(8, os.cpu_count() or 1))


def judge_many(pairs: Sequence[tuple[Task, str | bytes]], config: JudgeConfig, jobs: int | None = None,
               progress: bool = True, on_result: Callable[[EvalResult], None] | None = None,
               on_indexed_result: Callable[[int, EvalResult], None] | None = None) -> list[EvalResult]:
    """Results in the order of `pairs`; each also goes to `on_result` (and, with its index in `pairs`, to
    `on_indexed_result`) as it finishes. A broken task gives a result with fault `task_error`,
    so one bad task never loses the other results. Ctrl-C raises `Interrupted` at once, holding the
    results that finished before it (the evaluations in flight are killed)."""
    device = config.resolved_device()
    config = JudgeConfig.from_dict({**config.__dict__, "device": device})
    jobs = jobs or default_jobs()
    gate = SharedGate()
    results: list[EvalResult | None] = [None] * len(pairs)
    columns = (TextColumn("[bold]judging"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("eta"), TimeRemainingColumn())
    pool = ThreadPoolExecutor(jobs)
    try:
        with Progress(*columns, disable=not progress, transient=False) as bar:
            task_bar = bar.add_task("judging", total=len(pairs))
            futures = {pool.submit(judge_one, t, a, config, gate): i for i, (t, a) in enumerate(pairs)}
            for fut in as_completed(futures):
                results[futures[fut]] = fut.result()
                if on_result is not None:
                    on_result(results[futures[fut]])  # e.g. append to a JSONL file: nothing lost if interrupted
                if on_indexed_result is not None:
                    on_indexed_result(futures[fut], results[futures[fut]])
                bar.advance(task_bar)
    except KeyboardInterrupt:
        # Ctrl-C: the evaluations in flight are killed, not waited for; what finished before is kept.
        cancel_pool(pool)
        raise Interrupted(results) from None
    finally:
        pool.shutdown(wait=True)
    return [r for r in results if r is not None]


def judge_one(task: Task, answer: str | bytes, config: JudgeConfig, gate: SharedGate) -> EvalResult:
    """`judge` under `gate`, with an `oom` judged again alone, and a broken task as a `task_error`
    verdict: the one-evaluation step every batch runner and worker shares."""
    import torch

    try:
        try:
            with gate.shared():
                result: EvalResult | None = judge(task, answer, config)
        except torch.OutOfMemoryError:
            result = None  # the judge's own GPU memory (reference outputs, copies) ran out beside its neighbours'
        if result is None or result.status is Status.OOM:
            # Concurrent evaluations share the GPU's memory, so an OOM may be a neighbour's doing. Judge it
            # again with the device to itself: only an answer that also runs out of memory alone keeps `oom`.
            with gate.exclusive():
                if config.device != "cpu":
                    torch.cuda.empty_cache()  # what this process's allocator keeps, the candidate may need
                result = judge(task, answer, config)
        return result
    except TaskError as e:
        return EvalResult(status=Status.RUNTIME_ERROR, task_id=task.task_id, message=f"task error: {e}", fault="task_error",
                          error=str(e), device=config.device)


class SharedGate:
    """Many holders in `shared`, or one in `exclusive` (which waits for the shared ones to leave and
    keeps new ones out)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting_exclusive = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            self._cond.wait_for(lambda: not self._exclusive and self._waiting_exclusive == 0)
            self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                self._shared -= 1
                self._cond.notify_all()

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._cond:
            self._waiting_exclusive += 1
            self._cond.wait_for(lambda: not self._exclusive and self._shared == 0)
            self._waiting_exclusive -= 1
            self._exclusive = True
        try:
            yield
        finally:
            with self._cond:
                self._exclusive = False
                self._cond.notify_all()
