"""Preflight: can the judge build this task's reference at all, within the limits?

Every judging of a task first builds its `Reference` and computes expected outputs, in the judge's
own process, with no limit: one task at the wrong size (a 64 GB weight, a forward that never
returns) takes the machine down with everything else in the run. `preflight` does that first step
once per task in its own memory- and time-limited child (`kernelgym.tasks.limited`), at the
judge's size and device, so that a run can leave such a task out as a row with a status instead.

The statuses are the audit's (`kernelgym.tasks.audit.UNAUDITED`): `too-large` (cannot be made
small), `timeout`, `oom`, `crashed` (the child died), `error` (the task itself is broken); "ok"
otherwise. `kernelgym run` and `kernelgym eval --no-audit` use it; `kernelgym eval` with its audit
reads the same statuses from the audit's rows (`TaskCheck.from_audit`).
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from rich.table import Table

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.reference import Reference
from kernelgym.tasks.audit import UNAUDITED, TaskAudit
from kernelgym.tasks.limited import OOM, ChildLimits, each_task, is_out_of_memory, run_limited
from kernelgym.tasks.small import TaskTooLarge
from kernelgym.tasks.task import Task, TaskError

OK = "ok"
# The footprint does not depend on the seeds; fixed so that a preflight is reproducible.
PREFLIGHT_SEED = 0x9F11


@dataclass(frozen=True)
class TaskCheck:
    """One task's preflight: `status` "ok" or one of `UNAUDITED`, with why in `message`."""

    task_id: str
    status: str
    message: str = ""
    seconds: float = 0.0  # wall time of the check, the child's start included

    def __post_init__(self) -> None:
        if self.status != OK and self.status not in UNAUDITED:
            raise ValueError(f"TaskCheck.status must be {OK!r} or one of {UNAUDITED}, not {self.status!r}")

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def label(self) -> str:
        """What a report shows for a task that was not judged: "over limits: oom", "task error"."""
        if self.ok:
            return OK
        return "task error" if self.status == "error" else f"over limits: {self.status}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskCheck:
        return cls(d["task_id"], d["status"], d.get("message", ""), float(d.get("seconds", 0.0)))

    @classmethod
    def from_audit(cls, audit: TaskAudit) -> TaskCheck:
        """The audit's row read as a preflight: an audit that hit a limit (or a broken task) did
        the same reference work in the same kind of child, and more."""
        if audit.verdict in UNAUDITED:
            return cls(audit.task_id, audit.verdict, audit.error or "")
        return cls(audit.task_id, OK)


def check_task(task: Task, config: JudgeConfig) -> TaskCheck:
    """Build the task's reference at the judge's size and device and compute one set of expected
    outputs: the work every judging of the task starts with. Never raises for a broken task."""
    device = config.resolved_device()
    size = config.resolved_size(device)
    rng = random.Random(config.seed if config.seed is not None else PREFLIGHT_SEED)
    try:
        reference = Reference(task, size, device, init_seed=rng.getrandbits(62))
        reference.expected(reference.inputs(rng.getrandbits(62), "task"))
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)  # a kernel still running is work the limit must see
    except TaskTooLarge as e:
        return TaskCheck(task.task_id, "too-large", str(e))
    except TaskError as e:
        return TaskCheck(task.task_id, OOM if is_out_of_memory(str(e)) else "error", str(e))
    return TaskCheck(task.task_id, OK)


def preflight(tasks: Sequence[Task], config: JudgeConfig, limits: ChildLimits, jobs: int = 1,
              progress: bool = True, on_check: Callable[[TaskCheck], None] | None = None) -> dict[str, TaskCheck]:
    """`check_task` for every task, each in its own child under `limits`, `jobs` children at once,
    handing each check to `on_check` as it finishes. Returns the checks by task id, in the tasks'
    order. A task over a limit is a check with that status; nothing here raises for a task."""
    device = config.resolved_device()

    def work(task: Task) -> TaskCheck:
        started = time.monotonic()
        outcome = run_limited(check_task, (task, config), limits, device)
        seconds = round(time.monotonic() - started, 3)
        if outcome.status == OK:
            return dataclasses.replace(outcome.value, seconds=seconds)
        return TaskCheck(task.task_id, outcome.status, outcome.message, seconds)

    checks = each_task(list(tasks), work, jobs=jobs, progress=progress, title="preflight", on_done=on_check)
    return {c.task_id: c for c in checks}


def read_checks(path: Path) -> dict[str, TaskCheck]:
    """The checks a JSONL file holds, by task id (the last line of a task wins); a line that does
    not parse (a run killed mid-write) is skipped, so that task is checked again."""
    checks: dict[str, TaskCheck] = {}
    if not Path(path).is_file():
        return checks
    for line in Path(path).read_text().splitlines():
        try:
            check = TaskCheck.from_dict(json.loads(line))
        except (ValueError, KeyError, TypeError):
            continue
        checks[check.task_id] = check
    return checks


def append_check(path: Path, check: TaskCheck) -> None:
    """One line per check, written as it finishes; a torn last line is ended first."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+b") as fh:  # appends go to the end wherever the reads left the position
        torn = False
        if fh.tell():
            fh.seek(-1, 2)
            torn = fh.read(1) != b"\n"
        fh.write((("\n" if torn else "") + json.dumps(check.to_dict()) + "\n").encode())


def preflight_table(checks: Sequence[TaskCheck], title: str = "Preflight") -> Table:
    """One row per check: the task, its status in a report's words, the seconds it took (audit rows
    do not say: "-"), why."""
    table = Table("task", "status", "seconds", "why", title=title)
    for c in checks:
        colour = "green" if c.ok else "red"
        table.add_row(c.task_id, f"[{colour}]{c.label}[/{colour}]", f"{c.seconds:.1f}" if c.seconds else "-",
                      c.message or "-")
    return table
