"""`Evaluator`: the in-process unit every backend wraps (a worker process, a Ray actor, a thread).

It resolves a job's task, judges the answer on its device, re-judges an `oom` with the device to
itself (the OOM may be a neighbour's doing), and turns a broken task into a verdict instead of an
exception. Thread-safe: call `evaluate` from up to `jobs` threads at once.
"""

from __future__ import annotations

import threading
from typing import Any

from kernelgym.jobs import Job, JobOutcome
from kernelgym.judge.batch import SharedGate, judge_one
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.loaders import resolve_tasks
from kernelgym.tasks.task import Task, TaskError


class Evaluator:
    """Judges jobs on one device (`cpu`, `cuda:N`)."""

    def __init__(self, device: str, base_config: dict[str, Any] | None = None, name: str = "") -> None:
        self.device = device
        self.base_config = dict(base_config or {})
        self.name = name or device
        self._gate = SharedGate()
        self._tasks: dict[tuple[str, str | None], Task] = {}
        self._tasks_lock = threading.Lock()

    def evaluate(self, job: Job) -> JobOutcome:
        """One job's outcome. Never raises for a bad answer or a bad task (those are verdicts)."""
        try:
            config = JudgeConfig.from_dict({**self.base_config, **job.config, "device": self.device})
        except (ValueError, TypeError) as e:
            return self._verdict(job, EvalResult(status=Status.INVALID_ANSWER, task_id=job.task_id,
                                                 message=f"bad judge config: {e}", fault="bad_config"))
        try:
            task = self.task(job)
        except TaskError as e:
            result = EvalResult(status=Status.RUNTIME_ERROR, task_id=job.task_id, message=f"task error: {e}",
                                fault="task_error", error=str(e), device=self.device)
            return self._verdict(job, result)
        return self._verdict(job, judge_one(task, job.answer, config, self._gate))

    def task(self, job: Job) -> Task:
        """The job's task (cached: resolving a spec may read files)."""
        key = (job.task_id, job.task_source)
        with self._tasks_lock:
            cached = self._tasks.get(key)
        if cached is not None:
            return cached
        if job.task_source is not None:
            task = Task(task_id=job.task_id, source=job.task_source, origin="inline")
            task.validate()
        else:
            found = resolve_tasks(job.task_id)
            if len(found) != 1:
                raise TaskError(f"task {job.task_id!r} names {len(found)} tasks, not one")
            task = found[0]
        with self._tasks_lock:
            self._tasks[key] = task
        return task

    def _verdict(self, job: Job, result: EvalResult) -> JobOutcome:
        return JobOutcome(job_id=job.id, result=result.to_dict(), worker=self.name)
