"""Eval metrics: pure functions over `Attempt`s (one judged answer each). No I/O, no judging.

Definitions (N = the attempts of a view, one per (task, sample) unless said otherwise):
  * compile rate  = (1/N) sum_i 1[compiled_i]: the answer imported, built `ModelNew` and its Triton
                    kernels compiled (`rewards.functions.is_compiled`: a `compile_error` at a kernel's
                    first launch is not compiled, as KernelBench counts it).
  * correctness   = (1/N) sum_i 1[pass_i]; pass = judged ok, correct on every trial, no cheat
                    verdict (`rewards.functions.is_pass`, the one definition training uses too).
  * fast_p        = (1/N) sum_i 1[pass_i and speedup_i > p]   (KernelBench, Ouyang et al. 2025):
                    every failure counts as not fast. fast_0 is the correctness rate.
  * geomean speedup = exp(mean_i ln speedup_i) over the passing attempts whose speed was measured.
  * triton_share  = mean over passing attempts with a profile of the device time in the answer's
                    own Triton kernels / all kernel device time.
  * cheat rate    = (1/N) sum_i 1[a threat rule fired on i]; per rule, each attempt counts once.
  * pass@k        = mean over tasks of 1 - C(n-c, k) / C(n, k) (the unbiased estimator of Chen et
                    al. 2021), n samples of the task, c of them passing; tasks with n < k are left out.
  * ci95          = 95 % Wilson score intervals of the rates above (compiled, correct, fast_1,
                    fast_1.2, cheat) at an effective sample size: samples of one task are not
                    independent, so n_eff = p(1-p) / var_cluster(p) from the task-clustered
                    (ratio-estimator) variance, clamped to [tasks, attempts]; `tasks` when the
                    observed variance is 0 (all or none passing), the conservative end.
Speedups are against PyTorch eager and, separately, against torch.compile of the reference.

Views: `at_turn(t)` holds the turn-t answers; `best_so_far(t)` the best answer of each sample over
turns 1..t (`rank_key`), which is the test-time-scaling curve; best-of-turns is `best_so_far(T)`.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from kernelgym.eval.records import Attempt
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.preflight import TaskCheck
from rewards.functions import is_cheat, is_compiled, is_pass

FAST_P = (0.0, 1.0, 1.2, 1.5, 2.0)
BASELINES = ("eager", "compile")
NO_LEVEL = "other"  # the group of tasks without a KernelBench level (our own sets)


def speedup(result: EvalResult, baseline: str = "eager") -> float | None:
    """The measured speedup against `baseline` (eager or compile); None when not measured."""
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, not {baseline!r}")
    return result.speedup_eager if baseline == "eager" else result.speedup_compile


def fast_p(attempts: Sequence[Attempt], p: float, baseline: str = "eager") -> float | None:
    """KernelBench's fast_p over all attempts (see the module docstring). For p > 0 a passing
    answer whose speed was not measured counts as not fast, and the value is None when there are
    passing answers but none was timed (a CPU run): "not measured", not "0%". None for no attempts."""
    if not attempts:
        return None
    passing = [a for a in attempts if is_pass(a.result)]
    if p <= 0:
        return len(passing) / len(attempts)
    timed = [s for a in passing if (s := speedup(a.result, baseline)) is not None]
    if passing and not timed:
        return None
    return sum(s > p for s in timed) / len(attempts)


def geomean_speedup(attempts: Sequence[Attempt], baseline: str = "eager") -> float | None:
    """exp(mean ln s) over passing attempts with a measured speedup s > 0; None if there are none."""
    logs = [math.log(s) for a in attempts if is_pass(a.result)
            and (s := speedup(a.result, baseline)) is not None and s > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one task: 1 - C(n-c, k)/C(n, k), as the stable product
    1 - prod_{i=n-c+1}^{n} (1 - k/i). Needs 1 <= k <= n and 0 <= c <= n."""
    if not (1 <= k <= n and 0 <= c <= n):
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def mean_pass_at_k(attempts: Sequence[Attempt], k: int) -> float | None:
    """pass@k averaged over the tasks that have at least k samples in `attempts`; None if none has."""
    n: Counter[str] = Counter()
    c: Counter[str] = Counter()
    for a in attempts:
        n[a.task_id] += 1
        c[a.task_id] += is_pass(a.result)
    values = [pass_at_k(n[t], c[t], k) for t in n if n[t] >= k]
    return sum(values) / len(values) if values else None


def rank_key(result: EvalResult) -> tuple[bool, float, bool, bool]:
    """Orders answers from worst to best: passing, then faster, then not a cheat, then compiled."""
    s = result.speedup_eager if result.speedup_eager is not None else 0.0
    return (is_pass(result), s, not is_cheat(result), is_compiled(result))


def at_turn(attempts: Iterable[Attempt], turn: int) -> list[Attempt]:
    return [a for a in attempts if a.turn == turn]


def best_so_far(attempts: Iterable[Attempt], turn: int) -> list[Attempt]:
    """Each sample's best answer among turns 1..turn (the earliest of equals), sorted by key."""
    best: dict[tuple[str, int], Attempt] = {}
    for a in sorted(attempts, key=lambda a: a.key):
        if a.turn > turn:
            continue
        held = best.get((a.task_id, a.sample))
        if held is None or rank_key(a.result) > rank_key(held.result):
            best[(a.task_id, a.sample)] = a
    return [best[k] for k in sorted(best)]


def level_name(level: int | None) -> str:
    return NO_LEVEL if level is None else f"level{level}"


def by_level(attempts: Iterable[Attempt]) -> dict[str, list[Attempt]]:
    groups: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        groups[level_name(a.level)].append(a)
    return dict(sorted(groups.items()))


@dataclass
class Summary:
    """Every metric of one view. Rates are fractions in [0, 1]; None means not measurable here."""

    tasks: int
    attempts: int
    compile_rate: float | None
    correct_rate: float | None
    fast_p: dict[str, dict[str, float | None]]  # baseline -> "p" -> fast_p
    geomean_speedup: dict[str, float | None]  # baseline -> geometric mean over passing answers
    triton_share: float | None
    cheat_rate: float | None
    cheats_by_rule: dict[str, float] = field(default_factory=dict)
    pass_at_k: dict[str, float | None] = field(default_factory=dict)
    statuses: dict[str, int] = field(default_factory=dict)
    ci95: dict[str, list[float] | None] = field(default_factory=dict)  # rate name -> [low, high]
    untimed_passes: int = 0  # passing answers without a speedup (CPU runs, or timing failed)
    system_errors: int = 0  # answers the service could not judge; counted as failures

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(attempts: Sequence[Attempt], ks: Sequence[int] = (1,)) -> Summary:
    """Every metric of the module docstring over `attempts`."""
    n = len(attempts)
    rate = (lambda count: count / n) if n else (lambda count: None)
    shares = [a.result.profile.triton_share for a in attempts if is_pass(a.result) and a.result.profile is not None]
    rules: Counter[str] = Counter()
    for a in attempts:
        rules.update({c.rule for c in a.result.cheats} or ({"unnamed"} if is_cheat(a.result) else set()))
    passing = [a for a in attempts if is_pass(a.result)]
    return Summary(
        tasks=len({a.task_id for a in attempts}), attempts=n,
        compile_rate=rate(sum(is_compiled(a.result) for a in attempts)),
        correct_rate=rate(len(passing)),
        fast_p={b: {f"{p:g}": fast_p(attempts, p, b) for p in FAST_P} for b in BASELINES},
        geomean_speedup={b: geomean_speedup(attempts, b) for b in BASELINES},
        triton_share=sum(shares) / len(shares) if shares else None,
        cheat_rate=rate(sum(is_cheat(a.result) for a in attempts)),
        cheats_by_rule={rule: count / n for rule, count in sorted(rules.items())},
        pass_at_k={str(k): mean_pass_at_k(attempts, k) for k in ks},
        statuses=dict(sorted(Counter(a.result.status.value for a in attempts).items())),
        ci95=rate_intervals(attempts),
        untimed_passes=sum(speedup(a.result) is None for a in passing),
        system_errors=sum(a.result.status is Status.SYSTEM_ERROR for a in attempts),
    )


# The rates given an interval, as a per-attempt indicator each.
CI_RATES: dict[str, Any] = {
    "compile_rate": is_compiled,
    "correct_rate": is_pass,
    "fast_1": lambda r: is_pass(r) and (speedup(r) or 0.0) > 1.0,
    "fast_1.2": lambda r: is_pass(r) and (speedup(r) or 0.0) > 1.2,
    "cheat_rate": is_cheat,
}


def rate_intervals(attempts: Sequence[Attempt], z: float = 1.96) -> dict[str, list[float] | None]:
    """`CI_RATES`' 95 % intervals (module docstring); None for a rate with no attempts, and for
    fast_p where passing answers were never timed (the rate itself is "not measured")."""
    passing_untimed = any(is_pass(a.result) for a in attempts) and \
        all(speedup(a.result) is None for a in attempts if is_pass(a.result))
    out: dict[str, list[float] | None] = {}
    for name, hit in CI_RATES.items():
        if not attempts or (name.startswith("fast_") and passing_untimed):
            out[name] = None
            continue
        by_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for a in attempts:
            by_task[a.task_id][0] += bool(hit(a.result))
            by_task[a.task_id][1] += 1
        out[name] = list(clustered_wilson(list(by_task.values()), z))
    return out


def clustered_wilson(clusters: Sequence[Sequence[int]], z: float = 1.96) -> tuple[float, float]:
    """Wilson interval of sum(y) / sum(m) over clusters (y hits of m tries each), at the effective
    sample size of the cluster-robust variance, clamped to [clusters, tries]."""
    t, total = len(clusters), sum(m for _, m in clusters)
    p = sum(y for y, _ in clusters) / total
    var = (t / (t - 1)) * sum((y - p * m) ** 2 for y, m in clusters) / total ** 2 if t > 1 else 0.0
    n = min(total, max(t, p * (1 - p) / var)) if var > 0 else t
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_ks(samples: int) -> list[int]:
    """The k of pass@k to report for `samples` samples per task: 1, 5, 10, ... up to `samples`."""
    return sorted({k for k in (1, 2, 5, 10, 20, 50, 100) if k <= samples} | {samples})


def evaluate(attempts: Sequence[Attempt], turns: int, samples: int, degenerate: Iterable[str] = (),
             keep_degenerate: bool = False, over_limits: Mapping[str, TaskCheck] | None = None) -> dict[str, Any]:
    """The whole metrics document of a run (what `metrics.json` holds and the report renders).

    Tasks in `degenerate` (the audit found an answer that computes nothing passes them) are flagged
    per task and summarized on their own; they are left out of every headline number unless
    `keep_degenerate`. Tasks in `over_limits` (their reference work hit a limit: not judged) are a
    row each with their status, and count nowhere else, whatever verdicts an earlier run left."""
    degenerate = set(degenerate)
    over_limits = dict(over_limits or {})
    attempts = [a for a in attempts if a.task_id not in over_limits]
    ks = pass_ks(samples)
    main = [a for a in attempts if keep_degenerate or a.task_id not in degenerate]
    side = [a for a in attempts if a.task_id in degenerate]
    best = best_so_far(main, turns)
    return {
        "turns": turns, "samples": samples, "pass_k": ks,
        "overall": summarize(best, ks).to_dict(),
        "levels": {name: summarize(group, ks).to_dict() for name, group in by_level(best).items()},
        "per_turn": [{"turn": t, "at_turn": summarize(at_turn(main, t), ks).to_dict(),
                      "best_so_far": summarize(best_so_far(main, t), ks).to_dict()} for t in range(1, turns + 1)],
        "all_answers": {"overall": summarize(main, ks).to_dict(),
                        "levels": {name: summarize(g, ks).to_dict() for name, g in by_level(main).items()}},
        "degenerate": {"tasks": sorted(degenerate), "in_headline": keep_degenerate,
                       "overall": summarize(best_so_far(side, turns), ks).to_dict() if side else None},
        "over_limits": [over_limits[t].to_dict() for t in sorted(over_limits)],
        "tasks": task_rows(attempts, turns, degenerate, over_limits),
    }


def task_rows(attempts: Sequence[Attempt], turns: int, degenerate: set[str],
              over_limits: Mapping[str, TaskCheck] | None = None) -> list[dict[str, Any]]:
    """One row per task: samples, how many passed (best of turns), the best answer's status and
    speedups; a task over limits has no answers and its check's label ("over limits: oom") as status."""
    rows = []
    groups: dict[str, list[Attempt]] = defaultdict(list)
    for a in best_so_far(attempts, turns):
        groups[a.task_id].append(a)
    for task_id, group in sorted(groups.items()):
        top = max(group, key=lambda a: rank_key(a.result))
        rows.append({"task_id": task_id, "level": group[0].level, "samples": len(group),
                     "passed": sum(is_pass(a.result) for a in group), "best_status": top.result.status.value,
                     "best_turn": top.turn, "speedup_eager": top.result.speedup_eager if is_pass(top.result) else None,
                     "speedup_compile": top.result.speedup_compile if is_pass(top.result) else None,
                     "degenerate": task_id in degenerate, "over_limits": None})
    for task_id, check in (over_limits or {}).items():
        rows.append({"task_id": task_id, "level": None, "samples": 0, "passed": 0, "best_status": check.label,
                     "best_turn": None, "speedup_eager": None, "speedup_compile": None, "degenerate": False,
                     "over_limits": check.status})
    return sorted(rows, key=lambda r: r["task_id"])
