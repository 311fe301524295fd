"""Which tasks RL draws from: a curriculum over the task pool (issue 27).

A group of rollouts on a task that every rollout fails, or every rollout solves, carries no advantage under
GRPO/TRLOO; in the fourteenth and fifteenth sessions' runs 70-83 % of the groups had no spread. Two filters:
- `within_max_ops`: generated chains of at most N ops (a static proxy for difficulty);
- `within_pass_range`: tasks whose measured pass rate under the starting policy lies in [low, high], read from
  a `kernelgym eval` run of that policy on the pool (its results.jsonl: a sample passes when any of its turns is
  `ok`). Tasks the run did not cover are left out unless asked for (`keep_unmeasured`): the eval usually covers
  a slice of the pool (`--limit`), and RL should draw from what is known to give a spread.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

from kernelgym.tasks.task import Task

log = logging.getLogger("train.curriculum")


def within_max_ops(tasks: Sequence[Task], max_ops: int) -> list[Task]:
    """`tasks` whose op chain has at most `max_ops` ops (0: all). Tasks that do not say (built-in, KernelBench)
    are kept: the bound is a curriculum over generated chains, not a filter of other sets."""
    if not max_ops:
        return list(tasks)

    def ops(t: Task) -> int | None:
        n = t.meta.get("num_ops")
        return int(n) if n is not None else (len(t.meta["ops"]) if t.meta.get("ops") is not None else None)

    kept = [t for t in tasks if (n := ops(t)) is None or n <= max_ops]
    log.info("task_max_ops %d: %d of %d tasks kept", max_ops, len(kept), len(tasks))
    return kept


def pass_rates(path: str | Path) -> dict[str, float]:
    """Per task, the share of its samples with an `ok` answer in some turn, from a `kernelgym eval` output
    directory or its results.jsonl. A missing or unreadable file is a ValueError (a curriculum asked for and
    silently not applied would train on another pool than the config says)."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.jsonl"
    if not p.is_file():
        raise ValueError(f"task_pass_rates: no {p} (a `kernelgym eval --out DIR` run's directory or results.jsonl)")
    passed: dict[str, dict[int, bool]] = defaultdict(dict)
    for n, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task, sample, ok = str(row["task_id"]), int(row["sample"]), row["status"] == "ok"
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"task_pass_rates: line {n} of {p} is not a kernelgym eval verdict") from None
        passed[task][sample] = passed[task].get(sample, False) or ok
    if not passed:
        raise ValueError(f"task_pass_rates: {p} holds no verdict")
    return {task: sum(s.values()) / len(s) for task, s in passed.items()}


def within_pass_range(tasks: Sequence[Task], rates: dict[str, float], low: float, high: float,
                      keep_unmeasured: bool = False) -> list[Task]:
    """`tasks` whose pass rate in `rates` is within [low, high], and (`keep_unmeasured`) those without a rate."""
    in_range = [t for t in tasks if t.task_id in rates and low <= rates[t.task_id] <= high]
    kept = [t for t in tasks if (t.task_id in rates and low <= rates[t.task_id] <= high)
            or (keep_unmeasured and t.task_id not in rates)]
    log.info("task pass range [%g, %g]: %d of %d tasks kept (%d measured, %d of them in range; unmeasured %s)",
             low, high, len(kept), len(tasks), sum(t.task_id in rates for t in tasks), len(in_range),
             "kept" if keep_unmeasured else "left out")
    return kept
