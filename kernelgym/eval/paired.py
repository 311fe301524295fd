"""Two eval runs side by side, paired on the tasks both judged (`kernelgym eval --compare A B`).

Issue 27 asks whether RL beats SFT "beyond noise". Two runs' headline rates with their own intervals answer that
weakly (different task sets, overlapping intervals); the paired question is sharper: on the same tasks, how much
more often does B pass than A? Per task, each run's rate is the share of its samples whose best answer over all
turns has the property (compiled, correct, fast_1); the difference B - A is averaged over the shared tasks, with
a 95 % interval from the spread of the per-task differences (the task is the unit that repeats: its samples are
not independent), and an exact two-sided sign test over the tasks where the two differ.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernelgym.eval.metrics import best_so_far, speedup
from kernelgym.eval.records import Attempt
from kernelgym.judge.result import EvalResult
from rewards.functions import is_compiled, is_pass

PROPERTIES: dict[str, Callable[[EvalResult], bool]] = {
    "compiled": is_compiled,
    "correct": is_pass,
    "fast_1": lambda r: is_pass(r) and (speedup(r) or 0.0) > 1.0,
}


@dataclass(frozen=True)
class PairedRate:
    """One property of B against A on the shared tasks. Rates and differences are fractions."""

    name: str
    tasks: int
    a: float
    b: float
    diff: float
    low: float
    high: float
    b_better: int  # tasks where B's rate is higher
    a_better: int
    p_value: float  # exact two-sided sign test over the tasks that differ


def per_task(attempts: Sequence[Attempt], prop: Callable[[EvalResult], bool]) -> dict[str, float]:
    """Per task, the share of its samples whose best answer over all turns has `prop`."""
    turns = max((a.turn for a in attempts), default=1)
    hits: dict[str, list[bool]] = defaultdict(list)
    for a in best_so_far(attempts, turns):
        hits[a.task_id].append(bool(prop(a.result)))
    return {task: sum(h) / len(h) for task, h in hits.items()}


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided binomial p-value of `wins` against `losses` under p = 1/2 (1.0 with no pairs)."""
    n = wins + losses
    if not n:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(0, min(wins, losses) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(a: Sequence[Attempt], b: Sequence[Attempt], z: float = 1.96) -> list[PairedRate]:
    """Each property of `PROPERTIES`, B against A, on the tasks both runs judged (none shared: an empty list)."""
    out = []
    for name, prop in PROPERTIES.items():
        ra, rb = per_task(a, prop), per_task(b, prop)
        shared = sorted(set(ra) & set(rb))
        if not shared:
            return []
        d = [rb[t] - ra[t] for t in shared]
        n = len(d)
        mean = sum(d) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else 0.0
        half = z * sd / math.sqrt(n)
        wins, losses = sum(x > 0 for x in d), sum(x < 0 for x in d)
        out.append(PairedRate(name, n, sum(ra[t] for t in shared) / n, sum(rb[t] for t in shared) / n, mean,
                              max(-1.0, mean - half), min(1.0, mean + half), wins, losses, sign_test(wins, losses)))
    return out


def markdown(rows: Sequence[PairedRate], name_a: str, name_b: str) -> str:
    """The comparison as a markdown table (docs/BENCHMARKS.md takes it as it is)."""
    lines = [f"| property | tasks | {name_a} | {name_b} | difference (95 % CI) | tasks B better / A better | sign test p |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.name} | {r.tasks} | {r.a:.1%} | {r.b:.1%} | {r.diff:+.1%} ({r.low:+.1%} to {r.high:+.1%}) | "
                     f"{r.b_better} / {r.a_better} | {r.p_value:.3g} |")
    return "\n".join(lines)
