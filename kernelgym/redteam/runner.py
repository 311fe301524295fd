"""Run the red-team corpus and the legitimate corpus (every built-in answer and every honest-but-unusual
answer of `tests/redteam/honest/`) through the judge."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kernelgym.judge.batch import judge_many
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult, Status
from kernelgym.redteam.corpus import Exploit, Expectation, expand_agnostic, load_corpus, load_external, load_honest
from kernelgym.tasks import builtin_task_ids
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin
from kernelgym.tasks.task import Task


@dataclass
class ExploitOutcome:
    """What the judge said about one exploit, with all checks on and (optionally) with static rules off."""

    exploit: Exploit
    result: EvalResult
    dynamic_result: EvalResult | None = None

    @property
    def caught(self) -> bool:
        return _matches(self.exploit.expect, self.result) or self.neutralized(self.result)

    def neutralized(self, result: EvalResult | None) -> bool:
        """Judged ok under replay, where the header says the attack cannot reach what is replayed."""
        return (result is not None and result.engine == "replay" and result.status is Status.OK
                and self.exploit.replay.startswith("neutral"))

    @property
    def dynamic_caught(self) -> bool | None:
        if self.dynamic_result is None:
            return None
        return _matches(self.exploit.expect_dynamic, self.dynamic_result) or self.neutralized(self.dynamic_result)

    @property
    def passed(self) -> bool:
        return self.caught and self.dynamic_caught is not False

    @property
    def open_gap(self) -> bool:
        """A documented hole that is still open (reported, not a failure)."""
        return bool(self.gap) and not self.passed

    @property
    def gap(self) -> str:
        """The exploit's documented gap where it is open on the device this outcome was judged on."""
        return self.exploit.gap_for(self.result.device)


@dataclass
class RedteamReport:
    device: str
    outcomes: list[ExploitOutcome] = field(default_factory=list)
    legit: list[EvalResult] = field(default_factory=list)
    legit_names: list[str] = field(default_factory=list)  # beside `legit`: 'builtin:<task>' or 'honest:<file>'
    skipped: list[Exploit] = field(default_factory=list)  # exploits that need another device

    @property
    def missed(self) -> list[ExploitOutcome]:
        return [o for o in self.outcomes if not o.passed and not o.gap]

    @property
    def gaps(self) -> list[ExploitOutcome]:
        return [o for o in self.outcomes if o.open_gap]

    @property
    def false_flags(self) -> list[EvalResult]:
        return [r for r in self.legit if r.status is not Status.OK]

    def legit_name(self, result: EvalResult) -> str:
        for name, r in zip(self.legit_names, self.legit):
            if r is result:
                return name
        return result.task_id

    @property
    def ok(self) -> bool:
        return not self.missed and not self.false_flags

    def by_threat(self) -> dict[str, list[ExploitOutcome]]:
        rows: dict[str, list[ExploitOutcome]] = {}
        for o in self.outcomes:
            rows.setdefault(o.exploit.threat, []).append(o)
        return dict(sorted(rows.items()))


def _matches(expected: tuple[Expectation, ...], result: EvalResult) -> bool:
    """Under judge v4 (replay) an exploit is caught by any rejection: its verdict rests on the replay,
    and the `expect` headers name what the in-process engine said. Under the in-process engine the
    verdict must be one the header expects. A file whose header expects `ok` documents an answer the
    judge must accept (e.g. a cost the judge must bear without refusing): `ok` is then its pass."""
    if result.status is Status.OK:
        return any(e.status is Status.OK for e in expected)
    if result.engine == "replay":
        return result.status is not Status.SYSTEM_ERROR and not all(e.status is Status.OK for e in expected)
    return any(e.matches(result) for e in expected)


def run_redteam(config: JudgeConfig, jobs: int | None = None, only: str | None = None, legit: bool = True,
                progress: bool = True, exploits: list[Exploit] | None = None,
                on_result: Callable[[str, EvalResult], None] | None = None,
                agnostic_tasks: list[str] | tuple[str, ...] | None = None,
                honest: bool = True, external: bool = False, shard: tuple[int, int] | None = None) -> RedteamReport:
    """Judge every exploit (and, with `legit`, every built-in answer and, with `honest` too, every
    honest-but-unusual answer) on `config`'s device.

    `only` filters exploits by threat code or file-name substring. Exploits marked `device: cuda`
    are skipped (and listed) on a CPU run. Task-agnostic exploits (`task: *`) run once per task of
    `agnostic_tasks` (default: every built-in task). With `legit` and `external`, the real-world answers of
    `tests/redteam/external/` join the legitimate corpus (those marked `cpu: no` only off the CPU).
    `on_result(name, result)` gets each verdict as it arrives, named `exploit:`, `dynamic:` (static rules
    off), `builtin:`, `honest:` or `external:` + the file's name. `shard=(k, n)` judges every n-th
    exploit and legitimate answer from the k-th (0-based), so that n processes, one per GPU, share a run.
    """
    def pick(items: list) -> list:  # noqa: ANN001 - any list
        return items if shard is None else items[shard[0]::shard[1]]

    def named(names: list[str]) -> Callable[[int, EvalResult], None] | None:
        return None if on_result is None else (lambda i, r: on_result(names[i], r))

    device = config.resolved_device()
    config = replace(config, device=device)
    report = RedteamReport(device=device)
    pool = exploits if exploits is not None else load_corpus()
    pool = expand_agnostic(pool, list(agnostic_tasks) if agnostic_tasks is not None else builtin_task_ids())
    chosen = [e for e in pool if only is None or only == e.threat or only in e.name]
    runnable = pick([e for e in chosen if e.runs_on(device)])
    report.skipped = [e for e in chosen if not e.runs_on(device)]
    tasks = _tasks_for(runnable)
    results = judge_many([(tasks[e.task], e.text) for e in runnable], config, jobs, progress,
                         on_indexed_result=named([f"exploit:{e.name}" for e in runnable]))
    report.outcomes = [ExploitOutcome(e, r) for e, r in zip(runnable, results)]
    deep = [o for o in report.outcomes if o.exploit.expect_dynamic]
    if deep:
        dyn = judge_many([(tasks[o.exploit.task], o.exploit.text) for o in deep],
                         replace(config, static_checks=False), jobs, progress,
                         on_indexed_result=named([f"dynamic:{o.exploit.name}" for o in deep]))
        for o, r in zip(deep, dyn):
            o.dynamic_result = r
    if legit:
        # Real-world code first, the built-ins last: a run cut by a deadline (the GPU follow-ups) then misses the
        # answers every earlier run judged ok, not the ones most likely to be refused.
        jobs_legit = []
        if external:
            answers = [a for a in load_external() if a.runs_on_cpu or device != "cpu"]
            tasks_e = {tid: load_builtin(tid)[0] for tid in sorted({a.task for a in answers})}
            jobs_legit += [(f"external:{a.name}", tasks_e[a.task], a.text) for a in answers]
        if honest:
            answers = load_honest()
            tasks_h = {tid: load_builtin(tid)[0] for tid in sorted({a.task for a in answers})}
            jobs_legit += [(f"honest:{a.name}", tasks_h[a.task], a.text) for a in answers]
        jobs_legit += [(f"builtin:{t.task_id}", t, builtin_answer_path(t.task_id).read_text()) for t in load_builtin()]
        jobs_legit = pick(jobs_legit)
        report.legit = judge_many([(t, text) for _, t, text in jobs_legit], config, jobs, progress,
                                  on_indexed_result=named([name for name, _, _ in jobs_legit]))
        report.legit_names = [name for name, _, _ in jobs_legit]
    return report


def report_from_rows(rows: list[dict[str, Any]]) -> tuple[RedteamReport, list[str]]:
    """The report of a run written as JSON lines (`kernelgym redteam --json-out`, one file per shard): each
    row an `EvalResult` with its `redteam` name (`exploit:`, `dynamic:`, `builtin:`, `honest:`, `external:`).
    Also the names the rows carry that the corpus no longer has (renamed or deleted files)."""
    exploits = {e.name: e for e in expand_agnostic(load_corpus(), builtin_task_ids())}
    outcomes: dict[str, ExploitOutcome] = {}
    dynamic: dict[str, EvalResult] = {}
    report, unknown = RedteamReport(device=""), []
    for row in rows:
        name = str(row.get("redteam", ""))
        result = EvalResult.from_dict({k: v for k, v in row.items() if k != "redteam"})
        report.device = report.device or result.device
        kind, _, file = name.partition(":")
        if kind in ("exploit", "dynamic") and file not in exploits:
            unknown.append(name)
        elif kind == "exploit":
            outcomes[file] = ExploitOutcome(exploits[file], result)
        elif kind == "dynamic":
            dynamic[file] = result
        elif kind in ("builtin", "honest", "external"):
            report.legit.append(result)
            report.legit_names.append(name)
        else:
            unknown.append(name or "(no name)")
    for file, result in dynamic.items():
        if file in outcomes:
            outcomes[file].dynamic_result = result
    report.outcomes = list(outcomes.values())
    return report, unknown


def _tasks_for(exploits: list[Exploit]) -> dict[str, Task]:
    return {tid: load_builtin(tid)[0] for tid in sorted({e.task for e in exploits})}


def report_table(report: RedteamReport):  # noqa: ANN201 - a rich Table
    """Per category: exploits run, caught, missed, and how many are also caught with static rules off."""
    from rich.table import Table

    table = Table("category", "exploits", "caught", "missed", "known gaps", "caught without static rules",
                  "false flags", title=f"red team on {report.device}")
    for threat, outcomes in report.by_threat().items():
        deep = [o for o in outcomes if o.dynamic_caught is not None]
        missed = sum(not o.passed and not o.gap for o in outcomes)
        gaps = sum(o.open_gap for o in outcomes)
        table.add_row(threat, str(len(outcomes)), str(sum(o.passed for o in outcomes)),
                      f"[red]{missed}[/red]" if missed else "0", f"[yellow]{gaps}[/yellow]" if gaps else "0",
                      f"{sum(bool(o.dynamic_caught) for o in deep)}/{len(deep)}" if deep else "static only", "-")
    if report.legit:
        flags = len(report.false_flags)
        table.add_row("honest answers (built-in + unusual)", str(len(report.legit)), "-", "-", "-", "-",
                      f"[red]{flags}[/red]" if flags else "0")
    return table


def describe_failures(report: RedteamReport) -> list[str]:
    """One line per missed exploit or flagged honest answer, saying what the judge said instead."""
    lines = []
    for o in report.missed:
        got = _verdict(o.result)
        line = f"MISSED {o.exploit.name} ({o.exploit.threat}, {o.exploit.task}): expected " \
               f"{' | '.join(map(str, o.exploit.expect))}, got {got}"
        if o.dynamic_caught is False:
            line += f"; static rules off: expected {' | '.join(map(str, o.exploit.expect_dynamic))}, " \
                    f"got {_verdict(o.dynamic_result)}"
        lines.append(line)
    for o in report.gaps:
        lines.append(f"KNOWN GAP {o.exploit.name} ({o.exploit.threat}): {o.gap}")
    for o in report.outcomes:
        if o.gap and o.passed:
            lines.append(f"GAP CLOSED {o.exploit.name}: now caught; remove its 'gap' header")
    for r in report.false_flags:
        lines.append(f"FALSE FLAG {report.legit_name(r)} ({r.task_id}): {r.status.value}: {r.message}")
    return lines


def _verdict(r: EvalResult | None) -> str:
    if r is None:
        return "nothing"
    rules = ",".join(sorted({c.rule for c in r.cheats}))
    return f"{r.status.value}{' ' + rules if rules else ''} ({r.message[:160]})"
