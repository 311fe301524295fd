"""What the service hands to a worker and what comes back: `Job`, `JobOutcome`.

Plain JSON-able data below both `kernelgym.service` (which queues, stores and retries jobs) and
`kernelgym.worker` (which evaluates them), so that neither imports the other for it. The backend
protocol that carries them is `kernelgym.service.backend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Job:
    """One evaluation request, as plain JSON-able data (it crosses process and node boundaries).

    `task_id` names a task the worker can resolve (`kernelgym.tasks.loaders.resolve_tasks`: a
    built-in id, a file path) unless `task_source` carries the KernelBench-style source itself.
    `config` holds `JudgeConfig` field overrides; `device` is chosen by the backend."""

    id: str
    task_id: str
    answer: str
    config: dict[str, Any] = field(default_factory=dict)
    task_source: str | None = None
    attempt: int = 1

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "task_id": self.task_id, "answer": self.answer, "config": dict(self.config),
                "task_source": self.task_source, "attempt": self.attempt}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Job":
        return cls(**d)


@dataclass(frozen=True)
class JobOutcome:
    """Exactly one per submitted job. `result` is `EvalResult.to_dict()` when the job was judged
    (whatever the answer's verdict); otherwise `system_error` says why the infrastructure failed
    and `retryable` whether running it again may help (a killed worker: yes; an unknown task: no,
    in which case `result` carries a `runtime_error`/`task_error` verdict instead)."""

    job_id: str
    result: dict[str, Any] | None = None
    system_error: str = ""
    retryable: bool = False
    worker: str = ""  # which worker/GPU judged it (for metrics and debugging)

    @property
    def ok(self) -> bool:
        return self.result is not None


OutcomeCallback = Callable[[JobOutcome], None]
