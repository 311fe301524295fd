"""Degenerate-task audit (RH-12): can an answer that computes nothing pass this task?

For each input distribution the judge knows (`task`, `signed`, `wide`), the reference runs on a few
seeds and every negative control is compared with its outputs by the judge's own `compare_outputs`:

  * `zeros`        zeros of the output's shape and dtype;
  * `constant`     the output's global mean as a scalar fill (an oracle: the best any constant does);
  * `row_mean`     the mean along the last non-trivial dim, broadcast back (axis-uniform outputs);
  * `identity[i]`  input `i` passed through, reshaped, where its dtype and numel match the output;
  * `stale`        the output for another seed's inputs, same model: what a cache or leftover
                   buffer returns;
  * `reseed`       the reference rebuilt under another init seed on another seed's inputs: a
                   precomputed tensor shipped with the answer (seed invariance).

A control passes a distribution when it passes every trial of it. The judge cycles its
`config.distributions` over trials, so a task is degenerate for the judge only when one control
passes under all of them; one that passes under `task` alone is reported but caught by `signed`.
Beside the controls, the METR statistics: the fraction of reference values within atol of 0, of
their mean, and within tolerance of the previous seed's output (METR rejects above 70/70/95%).

The controls and the reference are trusted code but not bounded ones: `audit_tasks` runs each task
in its own memory- and time-limited child (`kernelgym.tasks.limited`) when given limits, so a task
over them is a row (`timeout`, `oom`, `crashed`) and the run goes on; a task that cannot be made
small is a `too-large` row. Rows stream to JSONL as each task finishes (`AuditLog`), and a run
resumes from that file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch
from rich.table import Table

from kernelgym.judge.compare import as_list, compare_outputs
from kernelgym.judge.config import INPUT_DISTRIBUTIONS, JudgeConfig
from kernelgym.judge.reference import Reference
from kernelgym.tasks.limited import OOM, ChildLimits, each_task, is_out_of_memory, run_limited
from kernelgym.tasks.small import TaskTooLarge
from kernelgym.tasks.task import Task, TaskError

# METR's harness errors above these fractions of reference values (RH-12 in THREATS.md).
METR_THRESHOLDS = {"near_zero": 0.70, "near_mean": 0.70, "near_previous": 0.95}
# Elements per float64 chunk of the statistics and the constant control (128 MB at a time).
_CHUNK = 1 << 24
# Fixed so that an audit is reproducible; `JudgeConfig.seed` overrides it.
DEFAULT_AUDIT_SEED = 0x4A0D17


@dataclass
class DegeneracyStats:
    """Fractions of the reference's output values (all trials of one distribution, all outputs)."""

    near_zero: float  # |e| <= atol
    near_mean: float  # |e - mean(e)| <= atol, over outputs with more than one value
    near_previous: float  # |e - e_prev| <= atol + rtol*|e|, e_prev from the previous seed's inputs


@dataclass
class TaskAudit:
    """What the negative controls did on one task, per input distribution."""

    task_id: str
    judge_distributions: tuple[str, ...]  # the distributions the judge cycles (config.distributions)
    passing: dict[str, list[str]] = field(default_factory=dict)  # distribution -> controls passing every trial
    stats: dict[str, DegeneracyStats] = field(default_factory=dict)  # distribution -> METR statistics
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # why the task could not be audited
    limit: str | None = None  # the limit it hit: too-large, timeout, oom or crashed (with `error`)
    small: dict[str, Any] = field(default_factory=dict)  # the small size's footprint (`SmallPlan.summary`)

    @property
    def degenerate_controls(self) -> list[str]:
        """Controls that pass under every distribution the judge uses: the judge would reward them."""
        if self.error:
            return []
        sets = [set(self.passing.get(d, [])) for d in self.judge_distributions]
        return sorted(set.intersection(*sets)) if sets else []

    @property
    def degenerate(self) -> bool:
        return bool(self.degenerate_controls)

    @property
    def task_only_controls(self) -> list[str]:
        """Controls that pass under the `task` distribution alone but that the judge's mix catches."""
        return sorted(set(self.passing.get("task", [])) - set(self.degenerate_controls))

    @property
    def suspicious_stats(self) -> list[str]:
        """METR statistics over their threshold under every distribution the judge uses."""
        if self.error or not self.stats:
            return []
        return [
            name for name, limit in METR_THRESHOLDS.items()
            if all(d in self.stats and getattr(self.stats[d], name) > limit for d in self.judge_distributions)
        ]

    @property
    def verdict(self) -> str:
        """One word: too-large, timeout, oom, crashed, error, degenerate, task-only, suspicious or ok."""
        if self.limit:
            return self.limit
        if self.error:
            return "error"
        if self.degenerate:
            return "degenerate"
        if self.task_only_controls:
            return "task-only"
        return "suspicious" if self.suspicious_stats else "ok"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form, with the derived verdicts."""
        d = asdict(self)
        d.update(verdict=self.verdict, degenerate_controls=self.degenerate_controls,
                 task_only_controls=self.task_only_controls, suspicious_stats=self.suspicious_stats)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TaskAudit":
        """The inverse of `to_dict` (derived fields are recomputed)."""
        return cls(d["task_id"], tuple(d["judge_distributions"]), passing=dict(d.get("passing", {})),
                   stats={k: DegeneracyStats(**v) for k, v in d.get("stats", {}).items()},
                   notes=list(d.get("notes", [])), error=d.get("error"), limit=d.get("limit"),
                   small=dict(d.get("small") or {}))


# Verdicts of tasks the audit could not judge: reported, never counted as ok.
UNAUDITED = ("too-large", "timeout", "oom", "crashed", "error")


@dataclass
class _Trial:
    inputs: list[Any]
    expected: Any
    reseeded: Any  # the reference under another init seed, on another seed's inputs


def audit_task(task: Task, config: JudgeConfig, trials: int = 3) -> TaskAudit:
    """Run every negative control on `task` over `trials` seeds of each input distribution.

    Runs on `config.device` (`auto` means cpu here) at `config.resolved_size` of it: small on cpu.
    Never raises for a broken task: its `TaskError` is returned in `TaskAudit.error`.
    """
    if trials < 2:
        raise ValueError("audit_task needs trials >= 2: the stale control and statistics compare two seeds")
    device = "cpu" if config.device == "auto" else config.device
    size = config.resolved_size(device)
    rng = random.Random(config.seed if config.seed is not None else DEFAULT_AUDIT_SEED)
    audit = TaskAudit(task.task_id, tuple(config.distributions))
    try:
        if size == "small":
            audit.small = task.small_plan().summary()
        reference = Reference(task, size, device, init_seed=rng.getrandbits(62))
        reseeded = Reference(task, size, device, init_seed=rng.getrandbits(62))
        for dist in INPUT_DISTRIBUTIONS:
            drawn = _draw_trials(reference, reseeded, dist, trials, rng, audit.notes, park=device != "cpu")
            if not any(isinstance(e, torch.Tensor) for e in as_list(drawn[0].expected)):
                audit.notes.append("no tensor outputs: controls do not apply")
                audit.passing[dist] = []
                continue
            audit.passing[dist] = _passing_controls(drawn, config, scaled=dist == "wide", device=device)
            audit.stats[dist] = _degeneracy_stats(drawn, config, device=device)
            del drawn
    except TaskTooLarge as e:
        audit.error, audit.limit = str(e), "too-large"
    except TaskError as e:
        audit.error = str(e)
        if is_out_of_memory(audit.error):
            audit.limit = OOM
    return audit


def audit_tasks(tasks: Iterable[Task], config: JudgeConfig, progress: bool = True, trials: int = 3,
                limits: ChildLimits | None = None, on_audit: Callable[[TaskAudit], None] | None = None,
                jobs: int = 1) -> list[TaskAudit]:
    """`audit_task` over many tasks, each in its own child under `limits` (None: in this process),
    handing each audit to `on_audit` as it finishes; a rich progress bar naming the current task
    on stderr when `progress`. With `jobs` > 1 (and limits) that many children run at once; the
    audits come back in the tasks' order, `on_audit` sees them in the order they finish."""
    if jobs < 1:
        raise ValueError("audit_tasks needs jobs >= 1")

    def work(t: Task) -> TaskAudit:
        return audit_task(t, config, trials) if limits is None else _audit_limited(t, config, trials, limits)

    # In this process (no limits) one task at a time: audits side by side need a child each.
    return each_task(list(tasks), work, jobs=jobs if limits is not None else 1, progress=progress, title="audit",
                     on_done=on_audit)


def _audit_limited(task: Task, config: JudgeConfig, trials: int, limits: ChildLimits) -> TaskAudit:
    device = "cpu" if config.device == "auto" else config.device
    outcome = run_limited(audit_task, (task, config, trials), limits, device)
    if outcome.status == "ok":
        return outcome.value
    return TaskAudit(task.task_id, tuple(config.distributions), error=outcome.message, limit=outcome.status)


class AuditLog:
    """Audit rows in a JSONL file, one line written (and flushed) as each task finishes. An
    interrupted run leaves the rows of the tasks it finished; `done()` reads them back to resume."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def done(self) -> dict[str, TaskAudit]:
        """The audits already in the file, by task id; a torn last line (a run killed mid-write)
        is dropped from the file so that appending goes on cleanly."""
        if not self.path.is_file():
            return {}
        rows, kept = {}, []
        for line in self.path.read_text().splitlines():
            try:
                audit = TaskAudit.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError):
                continue
            rows[audit.task_id] = audit
            kept.append(line)
        self.path.write_text("".join(line + "\n" for line in kept))
        return rows

    def drop(self, task_ids: set[str]) -> None:
        """Rewrite the file without these tasks' rows (to audit them again)."""
        if task_ids and self.path.is_file():
            kept = [line for line in self.path.read_text().splitlines()
                    if line.strip() and json.loads(line).get("task_id") not in task_ids]
            self.path.write_text("".join(line + "\n" for line in kept))

    def start(self) -> None:
        """An empty file (a run that does not resume)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("")

    def append(self, audit: TaskAudit) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as fh:
            fh.write(json.dumps(audit.to_dict()) + "\n")


def audit_table(audits: list[TaskAudit]) -> Table:
    """One row per task: verdict, the controls passing per distribution, the METR statistics."""
    counts = {v: sum(a.verdict == v for a in audits) for v in ("degenerate", "task-only", "suspicious", *UNAUDITED)}
    caption = f"{len(audits)} tasks: " + ", ".join(f"{n} {v}" for v, n in counts.items() if n or v == "degenerate")
    table = Table(title="Degenerate-task audit (RH-12)", caption=caption)
    for name in ("task", "verdict", "passing: task", "passing: judge", "≈0", "≈mean", "≈prev", "notes"):
        table.add_column(name, justify="right" if name.startswith("≈") else "left")
    styles = {**{v: "red" for v in UNAUDITED}, "degenerate": "bold red", "task-only": "yellow", "suspicious": "yellow",
              "ok": "green"}
    for a in audits:
        stats = [" / ".join(f"{getattr(a.stats[d], s):.0%}" for d in INPUT_DISTRIBUTIONS if d in a.stats)
                 for s in METR_THRESHOLDS]
        notes = a.error or "; ".join(a.notes)
        table.add_row(a.task_id, f"[{styles[a.verdict]}]{a.verdict}[/]", ", ".join(a.passing.get("task", [])) or "-",
                      ", ".join(a.degenerate_controls) or "-", *stats, notes)
    return table


def _draw_trials(reference: Reference, reseeded: Reference, dist: str, n: int, rng: random.Random,
                 notes: list[str], park: bool = False) -> list[_Trial]:
    """Like the judge's trial plan (`Reference.draw`): both signs, then folded, then task inputs.
    With `park`, once the GPU is half full a trial's inputs and reseeded output (each used by one
    control) wait in pinned host memory: KernelBench's full sizes reach 6 GB a tensor, and three
    trials of inputs, outputs and reseeded outputs do not fit beside the controls on one GPU. The
    outputs stay (the stale control and the statistics read each twice); pageable copies cost
    3 s per 6 GB tensor, most of an audit, pinned ones a tenth of that."""
    drawn = []
    for _ in range(n):
        used, _seed, inputs, expected = reference.draw(dist, lambda: rng.getrandbits(62))
        if used != dist:  # the reference cannot take values of both signs
            note = f"{dist}: non-finite reference or error, the judge falls back to {used} inputs"
            if note not in notes:
                notes.append(note)
        other = reseeded.expected(reseeded.inputs(rng.getrandbits(62), used))
        trial = _Trial(inputs, expected, other)
        drawn.append(_Trial(_moved(inputs, "cpu"), expected, _moved(other, "cpu")) if park and _device_half_full()
                     else trial)
        del trial, inputs, expected, other
    return drawn


def _device_half_full() -> bool:
    if not torch.cuda.is_available():
        return True  # parking was asked for on a device this cannot measure: park
    free, total = torch.cuda.mem_get_info()
    return free < total / 2


def _moved(x: Any, device: str) -> Any:
    """Tensors in `x` (a tensor, or a list or tuple of them and other values) moved to `device`."""
    if isinstance(x, torch.Tensor):
        if device == "cpu" and x.is_cuda:
            return torch.empty(x.shape, dtype=x.dtype, pin_memory=True).copy_(x)
        return x.to(device)
    if isinstance(x, (list, tuple)):
        return type(x)(_moved(v, device) for v in x)
    return x


def _passing_controls(drawn: list[_Trial], config: JudgeConfig, scaled: bool = False,
                      device: str | None = None) -> list[str]:
    """Names of the controls whose output passes `compare_outputs` on every trial, compared on
    `device` (None: where the trials are)."""
    passed: dict[str, bool] = {}
    for k in range(len(drawn)):
        expected = drawn[k].expected if device is None else _moved(drawn[k].expected, device)
        for name, make in _control_outputs(drawn, k, expected, device):
            if passed.get(name) is False:
                continue  # failed an earlier trial: it cannot pass them all
            output = make()
            ok = output is not None and compare_outputs(expected, output, config, scaled=scaled, early=True).passed
            passed[name] = passed.get(name, True) and ok
            del output
        del expected
    return sorted(name for name, ok in passed.items() if ok)


def _control_outputs(drawn: list[_Trial], k: int, expected: Any,
                     device: str | None = None) -> list[tuple[str, Callable[[], Any]]]:
    """Every control for trial `k` (whose reference output, on `device`, is `expected`) as a name
    and a function making its answer, None where it does not apply: made one at a time, so that
    at full size a single control's output is in memory beside the reference's."""
    trial = drawn[k]
    here = (lambda x: x) if device is None else (lambda x: _moved(x, device))
    controls: list[tuple[str, Callable[[], Any]]] = [
        ("zeros", lambda: _map_tensors(expected, torch.zeros_like)),
        ("constant", lambda: _map_tensors(expected, _constant_fill)),
        ("row_mean", lambda: _map_tensors(expected, _row_mean)),
        ("stale", lambda: here(drawn[(k + 1) % len(drawn)].expected)),
        ("reseed", lambda: here(trial.reseeded)),
    ]
    for i, x in enumerate(trial.inputs):
        controls.append((f"identity[{i}]", lambda x=x: _map_tensors(expected, lambda e: _passthrough(x, e))))
    return controls


def _map_tensors(expected: Any, fn: Callable[[torch.Tensor], torch.Tensor | None]) -> Any:
    """`fn` applied to each tensor output (non-tensors copied); None if `fn` refuses any of them."""
    outs = []
    for e in as_list(expected):
        out = fn(e) if isinstance(e, torch.Tensor) else e
        if out is None:
            return None
        outs.append(out)
    return outs if isinstance(expected, (tuple, list)) else outs[0]


def _like(values: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """Float64 `values` in `e`'s dtype: rounded for integer outputs rather than truncated."""
    return (values if e.is_floating_point() else values.round()).to(e.dtype).contiguous()


def _constant_fill(e: torch.Tensor) -> torch.Tensor | None:
    if e.numel() <= 1:  # a single value is its own mean: the control would be the answer
        return None
    mean = _mean64(e)
    return torch.full(e.shape, mean if e.is_floating_point() else round(mean), dtype=e.dtype, device=e.device)


def _row_mean(e: torch.Tensor) -> torch.Tensor | None:
    dims = [d for d in range(e.dim()) if e.shape[d] > 1]
    if not dims:
        return None
    # The mean accumulates in float64 without a float64 copy of `e` (6 GB outputs make that 12 GB).
    means = e.mean(dim=dims[-1], keepdim=True, dtype=torch.float64) if e.is_floating_point() \
        else e.to(torch.float64).mean(dim=dims[-1], keepdim=True)
    return _like(means, e).expand(e.shape).contiguous()


def _mean64(e: torch.Tensor) -> float:
    """The mean of `e` accumulated in float64, chunk by chunk."""
    flat = e.reshape(-1)
    return sum(float(flat[k:k + _CHUNK].double().sum()) for k in range(0, flat.numel(), _CHUNK)) / max(flat.numel(), 1)


def _passthrough(x: Any, e: torch.Tensor) -> torch.Tensor | None:
    if not isinstance(x, torch.Tensor) or x.dtype != e.dtype or x.numel() != e.numel():
        return None
    return x.to(e.device).reshape(e.shape)


def _degeneracy_stats(drawn: list[_Trial], config: JudgeConfig, device: str | None = None) -> DegeneracyStats:
    """METR's three fractions over every finite reference value of every trial, in float64 chunks
    on `device` (None: where the trials are)."""
    zero = mean = prev = total = total_mean = 0
    for k, trial in enumerate(drawn):
        previous = as_list(drawn[k - 1].expected)
        for i, e in enumerate(as_list(trial.expected)):
            if not isinstance(e, torch.Tensor) or e.numel() == 0:
                continue
            atol, rtol = config.tolerance(str(e.dtype).removeprefix("torch."))
            e = e if device is None else e.to(device)
            p = previous[i] if i < len(previous) else None
            p = p.to(e.device) if isinstance(p, torch.Tensor) and p.shape == e.shape else None
            flat, flat_p = e.reshape(-1), None if p is None else p.reshape(-1)
            chunks = range(0, flat.numel(), _CHUNK)
            finite_sum = finite_count = 0.0
            for c in chunks:
                e64 = flat[c:c + _CHUNK].double()
                finite = torch.isfinite(e64)
                zero += int((finite & (e64.abs() <= atol)).sum())
                finite_sum += float(e64[finite].sum())
                finite_count += int(finite.sum())
                if flat_p is not None:
                    p64 = flat_p[c:c + _CHUNK].double()
                    prev += int((finite & ((e64 - p64).abs() <= atol + rtol * e64.abs())).sum())
            total += e.numel()
            if e.numel() > 1 and finite_count:
                centre = finite_sum / finite_count
                total_mean += e.numel()
                for c in chunks:
                    e64 = flat[c:c + _CHUNK].double()
                    mean += int((torch.isfinite(e64) & ((e64 - centre).abs() <= atol)).sum())
            del e, p, flat, flat_p
    return DegeneracyStats(near_zero=zero / max(total, 1), near_mean=mean / max(total_mean, 1),
                           near_previous=prev / max(total, 1))
