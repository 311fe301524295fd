"""The task-generation pipeline: compose candidates, validate them, split, write the dataset and its statistics.

Candidates are numbered 0, 1, 2, ... and each is a pure function of (seed, index); their verdicts
are merged in index order, so the accepted set is the same for a seed whatever `jobs` is. A
candidate is a `duplicate` exactly when a lower-numbered accepted task has its normalised-AST
hash; otherwise its verdict is `validate_candidate`'s. Generation stops at `n` accepted tasks,
after `max_candidates`, or after `max_seconds` (the statistics then say so).
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections import Counter, deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from kernelgym.taskgen.compose import Candidate, ComposeConfig, compose
from kernelgym.taskgen.dataset import rows_by_split, write_split
from kernelgym.taskgen.fingerprint import code_hash
from kernelgym.taskgen.splits import (HELDOUT, HELDOUT_FAMILY, TRAIN, EvalIndex, family_ops, shared_signatures,
                                      split_of)
from kernelgym.taskgen.validate import OK, REASONS, Deduplicator, ValidationConfig, Verdict, validate_candidate


@dataclass
class BuildConfig:
    """One generation run."""

    n: int = field(default=2000, metadata={"help": "accepted tasks wanted"})
    seed: int = field(default=0, metadata={"help": "generator seed: same seed, same tasks"})
    heldout_fraction: float = field(default=0.1, metadata={"help": "share of op-chain signatures held out"})
    heldout_families: tuple[str, ...] = field(default=(), metadata={
        "help": "op families (categories) held out whole: every chain with one of their ops is heldout_family"})
    jobs: int = field(default=0, metadata={"help": "validation processes on cpu (0: every core); cuda uses 1"})
    max_candidates: int = field(default=0, metadata={"help": "give up after this many candidates (0: 10 * n)"})
    max_seconds: float = field(default=0.0, metadata={"help": "stop after this long, keeping what passed (0: never)"})
    exclude: str = field(default="", metadata={"help": "task spec of an evaluation set: candidates matching one of "
                                                       "its tasks (normalised AST or call chain) are rejected"})
    only_split: str = field(default="", metadata={
        "help": "keep only this split's tasks (train, heldout, heldout_family): the others are skipped before "
                "validation, so a held-out set grows at a tenth of the cost; signatures decide splits the same "
                "way in every build (a salted hash), so new held-out tasks never share a chain with any train set"})
    compose: ComposeConfig = field(default_factory=ComposeConfig)
    validation: ValidationConfig = field(default_factory=ValidationConfig)

    def __post_init__(self) -> None:
        if self.n < 1 or self.jobs < 0 or self.max_candidates < 0 or self.max_seconds < 0:
            raise ValueError("BuildConfig needs n >= 1 and jobs, max_candidates, max_seconds >= 0")
        self.heldout_families = tuple(sorted(self.heldout_families))
        split_of("", self.heldout_fraction, heldout_families=self.heldout_families)  # validates both
        if self.only_split not in ("", TRAIN, HELDOUT, HELDOUT_FAMILY):
            raise ValueError(f"only_split: one of {TRAIN}, {HELDOUT}, {HELDOUT_FAMILY}, not {self.only_split!r}")

    @property
    def candidate_limit(self) -> int:
        # one split alone: ~10 % of chains are held out, so ten times the candidates of a whole build
        return self.max_candidates or (100 if self.only_split else 10) * self.n


@dataclass
class BuildResult:
    """Accepted rows (dataset rows, in index order), one verdict line per candidate, the statistics."""

    rows: list[dict[str, Any]]
    verdicts: list[dict[str, Any]]
    stats: dict[str, Any]


def generate_tasks(config: BuildConfig, progress: bool = True) -> BuildResult:
    """Run the pipeline in memory (see the module docstring); `progress` draws a rich bar on stderr."""
    start = time.perf_counter()
    dedupe = Deduplicator()
    rows: list[dict[str, Any]] = []
    verdicts: list[dict[str, Any]] = []
    stopped = ""
    columns = (TextColumn("[bold]taskgen[/bold]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
               TimeElapsedColumn(), TimeRemainingColumn())
    with Progress(*columns, console=Console(stderr=True), disable=not progress) as bar:
        job = bar.add_task("", total=config.n)
        for candidate, verdict in _verdicts(config, dedupe, start):
            verdict = dedupe.admit(candidate.task_id, verdict)
            verdicts.append(_verdict_line(candidate, verdict))
            if verdict.accepted:
                rows.append(_row(candidate, verdict, config))
                bar.advance(job)
            bar.update(job, description=f"{len(verdicts)} candidates, {len(verdicts) - len(rows)} rejected")
            if len(rows) >= config.n:
                break
        else:
            stopped = "time limit" if config.max_seconds and time.perf_counter() - start >= config.max_seconds \
                else "candidate limit"
    stats = build_stats(config, rows, verdicts, time.perf_counter() - start, stopped)
    return BuildResult(rows, verdicts, stats)


def _verdicts(config: BuildConfig, dedupe: Deduplicator, start: float) -> Iterator[tuple[Candidate, Verdict]]:
    """(candidate, verdict) in index order. Candidates whose hash is already accepted skip validation."""
    vcfg = config.validation
    excluded = _eval_index(config.exclude)
    jobs = 1 if vcfg.on_gpu else (config.jobs or os.cpu_count() or 1)
    pool = ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker) if jobs > 1 else None
    window: deque[tuple[Candidate, Future | Verdict]] = deque()
    index = 0
    try:
        while True:
            while (len(window) < 4 * jobs and index < config.candidate_limit
                   and not (config.max_seconds and time.perf_counter() - start >= config.max_seconds)):
                candidate = compose(config.seed, index, config.compose)
                index += 1
                digest = code_hash(candidate.source)
                first = dedupe.seen(digest)
                overlap = excluded.match(candidate.source) if excluded is not None else ""
                split = split_of(candidate.signature, config.heldout_fraction,
                                 heldout_families=config.heldout_families) if config.only_split else ""
                if split != config.only_split:
                    window.append((candidate, Verdict("other_split", split, code_hash=digest)))
                elif first is not None:
                    window.append((candidate, Verdict("duplicate", f"same normalised code as {first}",
                                                      code_hash=digest)))
                elif overlap:
                    window.append((candidate, Verdict("eval_overlap", overlap, code_hash=digest)))
                elif pool is None:
                    window.append((candidate, validate_candidate(candidate, vcfg)))
                else:
                    window.append((candidate, pool.submit(validate_candidate, candidate, vcfg)))
            if not window:
                return
            candidate, pending = window.popleft()
            yield candidate, pending.result() if isinstance(pending, Future) else pending
    finally:
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)


def _eval_index(spec: str) -> EvalIndex | None:
    if not spec:
        return None
    from kernelgym.tasks.loaders import resolve_tasks

    tasks = resolve_tasks(spec)
    if not tasks:
        raise ValueError(f"exclude: task spec {spec!r} names no task")
    return EvalIndex(tasks)


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)  # one process per core; small tensors gain nothing from threads


def _row(candidate: Candidate, verdict: Verdict, config: BuildConfig) -> dict[str, Any]:
    task = candidate.task()
    split = split_of(candidate.signature, config.heldout_fraction, heldout_families=config.heldout_families)
    return {"task_id": task.task_id, "name": task.name, "code": task.source, "level": task.level,
            "problem_id": task.problem_id, "split": split,
            **candidate.metadata(), "eager_ms": verdict.eager_ms, "ast_hash": verdict.code_hash,
            "notes": list(verdict.notes), "seed": candidate.seed, "index": candidate.index}


def _verdict_line(candidate: Candidate, verdict: Verdict) -> dict[str, Any]:
    return {"index": candidate.index, "task_id": candidate.task_id, "signature": candidate.signature,
            "dtype": candidate.dtype, "reason": verdict.reason, "detail": verdict.detail[:300],
            "est_ms": candidate.est_ms, "eager_ms": verdict.eager_ms, "seconds": round(verdict.seconds, 4)}


def build_stats(config: BuildConfig, rows: list[dict[str, Any]], verdicts: list[dict[str, Any]], seconds: float,
                stopped: str = "") -> dict[str, Any]:
    """What a run produced: counts, rejections by reason, op and size histograms, split sizes, time."""
    import torch

    reasons = Counter(v["reason"] for v in verdicts)
    held_ops = family_ops(config.heldout_families)
    by_split = rows_by_split(rows)
    checked = [v["seconds"] for v in verdicts if v["reason"] not in ("estimate", "duplicate", "eval_overlap", "other_split")]
    examples: dict[str, list[dict[str, str]]] = {}
    for v in verdicts:
        if v["reason"] != OK and len(examples.setdefault(v["reason"], [])) < 3:
            examples[v["reason"]].append({k: v[k] for k in ("task_id", "signature", "detail")})
    return {
        "config": {**{k: v for k, v in asdict(config).items() if k not in ("compose", "validation")},
                   "validation": asdict(config.validation)},
        "accepted": len(rows), "candidates": len(verdicts), "stopped": stopped or None,
        "rejected_by_reason": {r: reasons.get(r, 0) for r in REASONS},
        "rejected_examples": examples,
        "seconds": round(seconds, 2), "tasks_per_second": round(len(rows) / seconds, 2) if seconds else None,
        "validation_seconds_per_candidate": _quantiles(checked, 4),
        "ops": dict(Counter(op for r in rows for op in r["ops"]).most_common()),
        "categories": dict(Counter(c for r in rows for c in r["categories"]).most_common()),
        "chain_length": dict(sorted(Counter(r["num_ops"] for r in rows).items())),
        "dtype": dict(Counter(r["dtype"] for r in rows).most_common()),
        "input_rank": dict(sorted(Counter(len(r["input_shapes"][0]) for r in rows).items())),
        "level": dict(sorted(Counter(r["level"] for r in rows).items())),
        "sizes": {key: _quantiles([r[key] for r in rows if r[key] is not None])
                  for key in ("flops", "bytes_eager", "bytes_min", "params", "footprint_bytes", "est_ms", "eager_ms")},
        "splits": {s: {"tasks": len(rs), "signatures": len({r["signature"] for r in rs})}
                   for s, rs in by_split.items()},
        "signatures_shared_between_splits": len(shared_signatures(rows)),
        "heldout_family_ops_in_train": sum(1 for r in by_split["train"] if held_ops.intersection(r["ops"])),
        "unique_signatures": len({r["signature"] for r in rows}),
        "machine": {"cpus": os.cpu_count(), "device": config.validation.device, "python": platform.python_version(),
                    "torch": torch.__version__,
                    "gpu": torch.cuda.get_device_name() if config.validation.on_gpu else None},
    }


def _quantiles(values: list[float], digits: int = 6) -> dict[str, float] | None:
    if not values:
        return None
    values = sorted(values)

    def q(p: float) -> float:
        return float(f"{values[min(int(p * len(values)), len(values) - 1)]:.{digits}g}")

    return {"min": q(0), "p10": q(0.1), "median": float(f"{statistics.median(values):.{digits}g}"), "p90": q(0.9),
            "max": q(1.0), "mean": float(f"{statistics.fmean(values):.{digits}g}")}


def write_outputs(result: BuildResult, out_dir: str | Path, fmt: str = "parquet") -> list[Path]:
    """`train` and `heldout` split files, `stats.json` and `verdicts.jsonl` (one line per candidate)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_split(rs, out / split, fmt) for split, rs in rows_by_split(result.rows).items()]
    (out / "stats.json").write_text(json.dumps(result.stats, indent=2) + "\n", encoding="utf-8")
    (out / "verdicts.jsonl").write_text("".join(json.dumps(v) + "\n" for v in result.verdicts), encoding="utf-8")
    return [*paths, out / "stats.json", out / "verdicts.jsonl"]
