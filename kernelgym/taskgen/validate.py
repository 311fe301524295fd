"""Validation of generated tasks: each rule a task must pass before it becomes training data.

In order, cheapest first; the first rule that fails names the rejection reason:
  estimate           the roofline estimate of the eager time (H100) or the memory footprint is out of range
  parse              the source does not parse or lacks Model / get_inputs / get_init_inputs
  error              building the model or running forward fails
  non_finite         the reference output has NaN/Inf on the task's own inputs
  non_deterministic  same seeds, different output: twice through one model, or a second model built alike
  degenerate         a negative control of `kernelgym.tasks.audit` (zeros, constant, mean, identity,
                     stale, reseed) passes under every input distribution the judge uses: the output
                     does not depend on the inputs enough for the judge to tell an answer from a fake
  suspicious         the audit's METR statistics are over their thresholds (mostly zeros, mostly the mean)
  runtime_window     GPU only: the measured eager median is outside [min_ms, max_ms]
  duplicate          same normalised-AST hash as a task accepted earlier (`Deduplicator`)
  eval_overlap       same normalised AST or torch call chain as a task of the evaluation set the
                     build was told to exclude (`splits.EvalIndex`)

Runs on `config.device` at the judge's size for it (small on cpu, full on cuda). On cpu the runtime
window is not measured; the verdict's notes say so.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from kernelgym.judge.compare import as_list, compare_outputs, expected_is_finite
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.inputs import clone_values
from kernelgym.judge.reference import Reference
from kernelgym.taskgen.compose import Candidate, estimate_within
from kernelgym.taskgen.fingerprint import code_hash
from kernelgym.tasks.audit import DEFAULT_AUDIT_SEED, audit_task
from kernelgym.tasks.task import Task, TaskError

OK = "ok"
REASONS = ("estimate", "parse", "error", "non_finite", "non_deterministic", "degenerate", "suspicious",
           "runtime_window", "duplicate", "eval_overlap", "other_split")
_INPUT_SEED_SALT = 0x7A5C


@dataclass(frozen=True)
class ValidationConfig:
    """What a generated task must satisfy. Defaults suit training data for the H100 judge."""

    device: str = field(default="cpu", metadata={"help": "cpu (small size) or cuda / cuda:N (full size, timed)"})
    audit_trials: int = field(default=2, metadata={"help": "seeds per input distribution in the degenerate audit"})
    min_ms: float = field(default=0.02, metadata={"help": "cuda: shortest eager median kept (launch-bound below)"})
    max_ms: float = field(default=50.0, metadata={"help": "cuda: longest eager median kept"})
    est_min_ms: float = field(default=0.02, metadata={"help": "shortest roofline-estimated eager time kept"})
    est_max_ms: float = field(default=20.0, metadata={"help": "longest roofline-estimated eager time kept"})
    max_footprint_gb: float = field(default=4.0, metadata={"help": "largest estimated full-size memory footprint"})
    timing_reps: int = field(default=10, metadata={"help": "cuda: timed eager calls per task"})
    reject_suspicious: bool = field(default=True, metadata={"help": "reject tasks over METR's statistics thresholds"})
    seed: int = field(default=DEFAULT_AUDIT_SEED, metadata={"help": "seed of the checks' inputs and weights"})

    def __post_init__(self) -> None:
        JudgeConfig(device=self.device)  # the same device rules as the judge
        if self.audit_trials < 2:
            raise ValueError("ValidationConfig.audit_trials must be >= 2 (the stale control compares two seeds)")
        if not (0 <= self.min_ms < self.max_ms and 0 <= self.est_min_ms < self.est_max_ms):
            raise ValueError("ValidationConfig windows need 0 <= min < max (min_ms/max_ms, est_min_ms/est_max_ms)")

    @property
    def on_gpu(self) -> bool:
        return self.device.startswith("cuda")


@dataclass
class Verdict:
    """The outcome for one task: `reason` is `ok` or the first rule it broke (see REASONS)."""

    reason: str
    detail: str = ""
    eager_ms: float | None = None
    code_hash: str = ""
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def accepted(self) -> bool:
        return self.reason == OK

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Deduplicator:
    """Remembers the normalised-AST hashes of accepted tasks; the first task with a hash wins."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def seen(self, digest: str) -> str | None:
        """The id of the accepted task with this hash, or None."""
        return self._seen.get(digest)

    def admit(self, task_id: str, verdict: Verdict) -> Verdict:
        """`verdict` unchanged, or turned into a `duplicate` if its hash was accepted before."""
        if not verdict.accepted:
            return verdict
        first = self._seen.get(verdict.code_hash)
        if first is not None:
            return Verdict("duplicate", f"same normalised code as {first}", verdict.eager_ms, verdict.code_hash,
                           verdict.notes, verdict.seconds)
        self._seen[verdict.code_hash] = task_id
        return verdict


def validate_candidate(candidate: Candidate, config: ValidationConfig) -> Verdict:
    """The estimate rule, then `validate_task` on the candidate's task."""
    start = time.perf_counter()
    why = estimate_within(candidate, config.est_min_ms, config.est_max_ms, config.max_footprint_gb * 2**30)
    if why:
        return Verdict("estimate", why, seconds=time.perf_counter() - start)
    return validate_task(candidate.task(), config)


def validate_task(task: Task, config: ValidationConfig) -> Verdict:
    """Every rule but `estimate` and `duplicate` (which need the generator's metadata and the other tasks)."""
    start = time.perf_counter()
    try:
        task.validate()
        digest = code_hash(task.source)
    except (TaskError, SyntaxError) as e:
        return Verdict("parse", str(e), seconds=time.perf_counter() - start)
    verdict = _run_checks(task, config)
    verdict.code_hash = digest
    verdict.seconds = time.perf_counter() - start
    if config.on_gpu:
        torch.cuda.empty_cache()  # full-size tasks one after another: give each the whole GPU
    return verdict


def _run_checks(task: Task, config: ValidationConfig) -> Verdict:
    judge_config = JudgeConfig(device=config.device, seed=config.seed)
    device = config.device
    size = judge_config.resolved_size(device)
    input_seed = config.seed ^ _INPUT_SEED_SALT
    try:
        first = Reference(task, size, device, init_seed=config.seed)
        inputs = first.inputs(input_seed, "task")
        pristine = clone_values(inputs)  # forward may write to its inputs; the second call gets the same values
        expected = first.expected(inputs)
        if not any(isinstance(e, torch.Tensor) for e in as_list(expected)):
            return Verdict("error", "forward returns no tensor")
        if not expected_is_finite(expected):
            return Verdict("non_finite", "NaN or Inf in the reference output on the task's inputs")
        again = first.expected(pristine)  # no reseeding in between: randomness inside forward shows
        rebuilt = Reference(task, size, device, init_seed=config.seed)
        other = rebuilt.expected(rebuilt.inputs(input_seed, "task"))
        del rebuilt
    except TaskError as e:
        return Verdict("error", str(e))
    except Exception as e:  # noqa: BLE001 - a generated task that breaks a check is that task's fault
        return Verdict("error", f"{type(e).__name__}: {e}")
    for label, output in (("a second call of the same model", again), ("a second model built alike", other)):
        comparison = compare_outputs(expected, output, judge_config)
        if not comparison.passed:
            return Verdict("non_deterministic", f"{label} differs: {comparison.message}")
    audit = audit_task(task, judge_config, trials=config.audit_trials)
    notes = list(audit.notes)
    if audit.verdict == "error":
        return Verdict("error", audit.error or "audit failed")
    if audit.verdict == "degenerate":
        return Verdict("degenerate", "controls pass: " + ", ".join(audit.degenerate_controls))
    if audit.verdict == "suspicious" and config.reject_suspicious:
        return Verdict("suspicious", "METR statistics over threshold: " + ", ".join(audit.suspicious_stats))
    if audit.task_only_controls:
        notes.append("passes under task inputs only (the judge's signed inputs catch it): "
                     + ", ".join(audit.task_only_controls))
    if not config.on_gpu:
        notes.append("runtime window not measured on cpu (roofline estimate only)")
        return Verdict(OK, notes=notes)
    eager_ms = _eager_median_ms(first, inputs, config)
    if not (config.min_ms <= eager_ms <= config.max_ms):
        window = f"[{config.min_ms}, {config.max_ms}] ms"
        return Verdict("runtime_window", f"eager median {eager_ms:.4f} ms outside {window}", eager_ms=eager_ms,
                       notes=notes)
    return Verdict(OK, eager_ms=eager_ms, notes=notes)


def _eager_median_ms(reference: Reference, inputs: list[Any], config: ValidationConfig) -> float:
    """The judge's own timing loop (CUDA events, L2 flush, warm-up) on the reference model."""
    import statistics

    from kernelgym.judge.timing import time_calls

    samples, _, _ = time_calls(reference.model, [inputs], warmup=3, reps=config.timing_reps,
                               flush_bytes=JudgeConfig().l2_flush_bytes, device=reference.device)
    return statistics.median(samples)
