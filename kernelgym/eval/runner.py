"""`run_eval`: generate answers turn by turn, judge them through the service, write everything down.

The run directory holds:
  run.json           what was asked (model, backend, tasks, `EvalConfig`), the model's provenance
                     (`eval.provenance`: weight files' SHA-256, what is known of them) and every
                     invocation (the exact command, the commit and whether the checkout had changes)
  generations.jsonl  every answer (`Generation`), written as soon as its generate call returns
  results.jsonl      every verdict (`Attempt`), written as soon as the service returns it
  audit.jsonl        the degenerate-task audit, one line per task
  preflight.jsonl    without the audit (--no-audit): each task's reference work in a limited child
  results.db         the embedded service's store (its cache makes re-judging an answer free)
  metrics.json, report.md, *.png   written at the end (`kernelgym.eval.report`)

Resuming is the default: an answer already in generations.jsonl is not generated again and one
in results.jsonl is not judged again (a `system_error` verdict is, since it says nothing about the
answer). A task whose audit (or preflight) row hit a limit is neither generated for nor judged:
its reference alone could take the machine down; the report lists it apart, and a resumed run
reads the same rows. Within a turn, answers are submitted for judging as each generate call
returns, so the judge works while the model writes; turn t+1 of a sample starts once its turn t is
judged.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kernelgym.env.environment import STOP_RULES, EnvConfig
from kernelgym.env.prompts import load_templates
from kernelgym.eval.judging import JudgeClient, JudgeQueue
from kernelgym.eval.metrics import evaluate
from kernelgym.eval.records import Attempt, Generation, JsonlLog, Key
from kernelgym.eval.trajectory import Trajectory
from kernelgym.generation.base import Generator
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.audit import AuditLog, audit_tasks
from kernelgym.tasks.limited import ChildLimits
from kernelgym.tasks.preflight import TaskCheck, append_check, preflight, read_checks
from kernelgym.tasks.task import Task

# Settings that change what a resumed run would generate or how it is judged; turns and samples may grow.
FIXED_SETTINGS = ("model", "context_turns", "max_new_tokens", "temperature", "seed", "stop_on", "target_speedup",
                  "judge")


class EvalError(ValueError):
    """A run that cannot go ahead as asked (conflicting resume, duplicate task ids, ...)."""


@dataclass
class EvalConfig:
    """How answers are generated and judged. Defaults follow KernelBench's single-sample setting."""

    model: str = field(default="", metadata={"help": "the checkpoint or served model name (checked on resume)"})
    samples: int = field(default=1, metadata={"help": "answers (trajectories) per task: the k of pass@k"})
    turns: int = field(default=1, metadata={"help": "turns per trajectory; feedback from the environment between"})
    context_turns: int | None = field(default=None, metadata={
        "help": "previous turns shown in the prompt: the latest plus the best others; None: all"})
    max_new_tokens: int = field(default=4096, metadata={"help": "tokens per answer"})
    temperature: float = field(default=0.0, metadata={"help": "0: greedy"})
    seed: int = field(default=0, metadata={"help": "generation seed (each call derives its own from it)"})
    gen_batch: int = field(default=32, metadata={"help": "sequences per generate call (one JSONL flush each)"})
    stop_on: str = field(default="never", metadata={"help": "end a trajectory early: never, correct or speedup"})
    target_speedup: float = field(default=1.0, metadata={"help": "the speedup that ends it with stop_on=speedup"})
    judge: dict[str, Any] = field(default_factory=dict, metadata={"help": "JudgeConfig overrides for every answer"})

    def __post_init__(self) -> None:
        if self.samples < 1 or self.turns < 1 or self.gen_batch < 1 or self.max_new_tokens < 1:
            raise ValueError("EvalConfig needs samples, turns, gen_batch and max_new_tokens >= 1")
        if self.context_turns is not None and self.context_turns < 1:
            raise ValueError("EvalConfig.context_turns must be >= 1 (or None for every turn)")
        if self.temperature < 0:
            raise ValueError("EvalConfig.temperature must be >= 0")
        if self.stop_on not in STOP_RULES:
            raise ValueError(f"EvalConfig.stop_on must be one of {STOP_RULES}, not {self.stop_on!r}")
        JudgeConfig.from_dict(self.judge)  # an unknown or invalid judge field fails here, not on a worker


@dataclass
class RunFiles:
    """The paths of one run directory (see the module docstring)."""

    root: Path

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        self.info = self.root / "run.json"
        self.generations = JsonlLog(self.root / "generations.jsonl", Generation)
        self.attempts = JsonlLog(self.root / "results.jsonl", Attempt)
        self.audit = self.root / "audit.jsonl"
        self.preflight = self.root / "preflight.jsonl"
        self.store = self.root / "results.db"
        self.metrics = self.root / "metrics.json"


@dataclass
class Screen:
    """What a run knows of its tasks before judging any answer: the ones the audit flags degenerate,
    and the ones whose reference work hit a limit in its child (or whose task is broken), which are
    never judged."""

    degenerate: list[str] = field(default_factory=list)
    over_limits: dict[str, TaskCheck] = field(default_factory=dict)


def run_eval(tasks: Sequence[Task], config: EvalConfig, out_dir: Path, make_generator: Callable[[], Generator],
             open_judge: Callable[[], contextlib.AbstractContextManager[JudgeClient]],
             info: dict[str, Any] | None = None, screen: Screen | None = None,
             progress: bool = True, keep_degenerate: bool = False) -> dict[str, Any]:
    """Run (or resume) an eval and return its metrics document (`metrics.evaluate`), also written
    to metrics.json. The generator and the judge are only built when something needs them. The
    `screen`'s degenerate tasks are flagged and left out of the headline numbers unless
    `keep_degenerate`; its tasks over limits get no answers, only a row of their own."""
    files = RunFiles(out_dir)
    screen = screen or Screen()
    _check_tasks(tasks)
    _start_run(files, config, tasks, info or {})
    env_config = EnvConfig(max_turns=config.turns, stop_on=config.stop_on, target_speedup=config.target_speedup)
    templates = load_templates()
    trajectories = [Trajectory(t, s, env_config, templates) for t in tasks if t.task_id not in screen.over_limits
                    for s in range(config.samples)]
    with contextlib.ExitStack() as stack, _progress_bars(progress) as bars:
        run = _Run(config, files, {t.task_id: t.level for t in tasks}, make_generator, bars)
        stack.callback(run.close_generator)
        run.queue = JudgeQueue(open_judge, stack, config.judge, run.on_result)
        for turn in range(1, config.turns + 1):
            active = [tr for tr in trajectories if not tr.done and len(tr.turns) == turn - 1]
            if not active:
                break
            run.play_turn(turn, active)
    ordered = sorted(run.attempts.values(), key=lambda a: a.key)
    metrics = evaluate(ordered, config.turns, config.samples, screen.degenerate, keep_degenerate, screen.over_limits)
    files.metrics.write_text(json.dumps(metrics, indent=2))
    return metrics


class _Run:
    """The state of one `run_eval`: what is on disk, the lazily built generator, the judge queue."""

    def __init__(self, config: EvalConfig, files: RunFiles, levels: dict[str, int | None],
                 make_generator: Callable[[], Generator], bars: Progress) -> None:
        self.config, self.files, self.levels, self.bars = config, files, levels, bars
        self._make_generator = make_generator
        self._generator: Generator | None = None
        self.queue: JudgeQueue | None = None
        self.generations = files.generations.read()
        # A verdict counts only beside the answer it judged: one whose answer is generated again is dropped.
        self.attempts = {k: a for k, a in files.attempts.read().items()
                         if a.result.status is not Status.SYSTEM_ERROR and k in self.generations}
        self._judge_bar = 0
        self._submitted = 0

    def generator(self) -> Generator:
        if self._generator is None:
            self._generator = self._make_generator()
        return self._generator

    def close_generator(self) -> None:
        if self._generator is not None:
            self._generator.close()

    def on_result(self, key: Key, result: EvalResult, cached: bool) -> None:
        attempt = Attempt(key[0], key[1], key[2], result, level=self.levels[key[0]], cached=cached)
        self.attempts[key] = attempt
        self.files.attempts.append([attempt])

    def play_turn(self, turn: int, active: list[Trajectory]) -> None:
        """Generate and judge this turn of every active trajectory, then step their episodes."""
        assert self.queue is not None
        self._judge_bar, self._submitted = self.bars.add_task(f"judge turn {turn}", total=0), 0
        keys = [(tr.task.task_id, tr.sample, turn) for tr in active]
        tasks = {tr.task.task_id: tr.task for tr in active}
        self._judge([k for k in keys if k in self.generations], tasks)  # answers of an interrupted run go first
        missing = [tr for tr in active if (tr.task.task_id, tr.sample, turn) not in self.generations]
        bar = self.bars.add_task(f"generate turn {turn}", total=len(missing))
        for n, groups in _plan_calls(missing, turn, self.config):
            new = self._generate(turn, n, groups)
            self.bars.advance(bar, len(new))
            self._judge([g.key for g in new], tasks)
        self.queue.drain(lambda done: self.bars.advance(self._judge_bar, done))
        for tr, key in zip(active, keys):
            tr.record(self.generations[key].text, self.attempts[key].result)

    def _generate(self, turn: int, n: int, groups: list[list[Trajectory]]) -> list[Generation]:
        """One generate call: `n` answers for each group's shared prompt, on disk before it returns."""
        config = self.config
        conversations = [group[0].conversation(config.context_turns) for group in groups]
        first = groups[0][0]
        seed = zlib.crc32(f"{config.seed}:{turn}:{first.task.task_id}:{first.sample}".encode())
        started = time.monotonic()
        texts = self.generator().generate(conversations, n, config.max_new_tokens, config.temperature, seed)
        seconds = round((time.monotonic() - started) / max(1, n * len(groups)), 3)
        new = [Generation(tr.task.task_id, tr.sample, turn, text, seconds)
               for group, outs in zip(groups, texts) for tr, text in zip(group, outs)]
        self.files.generations.append(new)
        self.generations.update((g.key, g) for g in new)
        return new

    def _judge(self, keys: list[Key], tasks: dict[str, Task]) -> None:
        """Submit the answers of `keys` that have no verdict yet; collect the verdicts already in."""
        assert self.queue is not None
        todo = [(k, tasks[k[0]], self.generations[k].text) for k in keys if k not in self.attempts]
        self._submitted += len(todo)
        self.bars.update(self._judge_bar, total=self._submitted)
        self.queue.submit(todo)
        self.bars.advance(self._judge_bar, self.queue.poll(0))


def _plan_calls(missing: list[Trajectory], turn: int, config: EvalConfig) -> list[tuple[int, list[list[Trajectory]]]]:
    """Group the missing answers into generate calls: (n, groups), each group sharing one prompt.

    At turn 1 every sample of a task shares the task's prompt, so one conversation asks for all
    its missing samples at once; later turns have a prompt per trajectory (n = 1)."""
    if turn == 1:
        by_task: dict[str, list[Trajectory]] = {}
        for tr in missing:
            by_task.setdefault(tr.task.task_id, []).append(tr)
        groups = list(by_task.values())
    else:
        groups = [[tr] for tr in missing]
    by_n: dict[int, list[list[Trajectory]]] = {}
    for group in groups:
        by_n.setdefault(len(group), []).append(group)
    calls = []
    for n, same in sorted(by_n.items(), reverse=True):
        per_call = max(1, config.gen_batch // n)
        calls += [(n, same[i:i + per_call]) for i in range(0, len(same), per_call)]
    return calls


def screen_tasks(tasks: Sequence[Task], files: RunFiles, judge_config: JudgeConfig, audit: bool = True,
                 progress: bool = True, limits: ChildLimits | None = None, jobs: int = 1) -> Screen:
    """The degenerate-task audit (`kernelgym.tasks.audit`) of every task, or with `audit` False only
    the preflight (`kernelgym.tasks.preflight`), each task in its own limited child (`limits`,
    default `ChildLimits()`). Only the tasks audit.jsonl (preflight.jsonl) does not hold yet are
    done, a row written as each finishes; the screen covers them all. `jobs` children run at once (each
    task's child is its own process: on a GPU, 100 KernelBench references one after another took ~10 minutes)."""
    limits = limits or ChildLimits()
    if audit:
        log = AuditLog(files.audit)
        done = log.done()
        todo = [t for t in tasks if t.task_id not in done]
        if todo:
            audit_tasks(todo, judge_config, progress=progress, limits=limits, on_audit=log.append, jobs=jobs)
    else:
        checked = read_checks(files.preflight)
        todo = [t for t in tasks if t.task_id not in checked]
        if todo:
            preflight(todo, judge_config, limits, jobs=jobs, progress=progress,
                      on_check=lambda check: append_check(files.preflight, check))
    return read_screen(files, [t.task_id for t in tasks], audited=audit)


def read_screen(files: RunFiles, task_ids: Sequence[str], audited: bool) -> Screen:
    """The screen of these tasks from the run directory's rows: audit.jsonl, or preflight.jsonl for
    a run without the audit. An audit row that hit a limit counts as a preflight that did."""
    if audited:
        audits = AuditLog(files.audit).done()
        degenerate = sorted(t for t in task_ids if t in audits and audits[t].verdict == "degenerate")
        checks: Mapping[str, TaskCheck] = {t: TaskCheck.from_audit(a) for t, a in audits.items()}
    else:
        degenerate, checks = [], read_checks(files.preflight)
    return Screen(degenerate, {t: checks[t] for t in task_ids if t in checks and not checks[t].ok})


def _check_tasks(tasks: Sequence[Task]) -> None:
    if not tasks:
        raise EvalError("the task spec names no tasks")
    counts = Counter(t.task_id for t in tasks)
    dupes = sorted(task_id for task_id, n in counts.items() if n > 1)
    if dupes:
        raise EvalError(f"task ids must be unique in one run; repeated: {', '.join(dupes[:5])}")


def _start_run(files: RunFiles, config: EvalConfig, tasks: Sequence[Task], info: dict[str, Any]) -> None:
    """Write run.json, or check that a run being resumed asked for the same answers."""
    invocation = info.get("invocation")
    record = {**{k: v for k, v in info.items() if k != "invocation"}, "config": asdict(config),
              "tasks": [t.task_id for t in tasks], "invocations": [invocation] if invocation else []}
    if files.info.is_file():
        before = json.loads(files.info.read_text())
        changed = [k for k in FIXED_SETTINGS if before.get("config", {}).get(k) != record["config"].get(k)]
        if changed:
            was = ", ".join(f"{k}={before['config'].get(k)!r}" for k in changed)
            now = ", ".join(f"{k}={record['config'].get(k)!r}" for k in changed)
            raise EvalError(f"{files.root} holds a run with {was}; this one asks for {now}. Use another --out "
                            "directory, or delete that one to start over")
        record["started"] = before.get("started", record.get("started"))
        record["invocations"] = before.get("invocations", []) + record["invocations"]  # each command that resumed it
        record["resumed"] = before.get("resumed", 0) + 1
    files.root.mkdir(parents=True, exist_ok=True)
    record.setdefault("started", time.strftime("%Y-%m-%d %H:%M:%S"))
    files.info.write_text(json.dumps(record, indent=2))


@contextlib.contextmanager
def _progress_bars(enabled: bool, log_every_s: float = 30.0) -> Iterator[Progress]:
    """rich bars on stderr with elapsed time and ETA; invisible when disabled. Where stderr is not a
    terminal (a log file, a batch job) rich draws nothing live, so a line per unfinished bar is
    printed every `log_every_s` seconds instead."""
    console = Console(stderr=True)
    columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("eta"), TimeRemainingColumn())
    with Progress(*columns, console=console, disable=not enabled, transient=False) as bars:
        stop = threading.Event()
        if enabled and not console.is_terminal:
            threading.Thread(target=_log_progress, args=(bars, console, stop, log_every_s), daemon=True).start()
        try:
            yield bars
        finally:
            stop.set()


def _log_progress(bars: Progress, console: Console, stop: threading.Event, every_s: float) -> None:
    while not stop.wait(every_s):
        for task in bars.tasks:
            if task.total and not task.finished:
                eta = "?" if task.time_remaining is None else f"{task.time_remaining:.0f}s"
                console.print(f"{task.description}: {task.completed:.0f}/{task.total:.0f}, "
                              f"{task.elapsed or 0:.0f}s elapsed, eta {eta}", markup=False, highlight=False)
