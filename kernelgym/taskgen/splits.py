"""Leakage control: the held-out splits, and overlap with an evaluation set.

A task's split is a pure function of its signature (`linear>gelu>layer_norm`) and the held-out op
families. A chain holding an op of a held-out family (`pooling`, `loss`: the op categories of
`taskgen.ops`) is `heldout_family`: no training task, hence no training answer, contains that op,
so the split tests ops whose kernels a model never saw. Any other chain is `heldout` when a salted
hash says so: every task with one signature lands on the same side in every run, and tasks
generated later with a held-out signature stay held out; those chains are new combinations of ops
seen in training (recombination, not generalisation to new ops). Without held-out families (the
default) the splits are exactly those of earlier runs. Overlap with another task set (a
KernelBench checkout, our built-in tasks) is measured on normalised code, three ways: the same
normalised AST, the same torch call chain, and token 5-gram Jaccard similarity above a threshold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table

from kernelgym.taskgen.fingerprint import call_chain, code_hash, jaccard, shingles
from kernelgym.taskgen.ops import OPS
from kernelgym.tasks.task import Task

TRAIN, HELDOUT, HELDOUT_FAMILY = "train", "heldout", "heldout_family"
SPLIT_SALT = "kernelgym-taskgen-heldout"
# The families `--heldout-families` is documented with: ops with writers of their own in the
# cold-start corpus (pooling: emit_pool; loss: emit_losses), 13 ops, both in KernelBench level 1.
RECOMMENDED_FAMILIES = ("pooling", "loss")


def family_ops(families: Iterable[str]) -> frozenset[str]:
    """The ops of these op families (categories of `taskgen.ops`); ValueError naming an unknown one."""
    families = set(families)
    known = {op.category for op in OPS}
    unknown = sorted(families - known)
    if unknown:
        raise ValueError(f"unknown op families {unknown}: choose among {sorted(known)}")
    return frozenset(op.name for op in OPS if op.category in families)


def parse_families(text: str) -> tuple[str, ...]:
    """`pooling,loss` -> ("loss", "pooling"): sorted and checked (`family_ops`)."""
    names = tuple(sorted({n.strip() for n in text.split(",") if n.strip()}))
    family_ops(names)
    return names


def split_of(signature: str, heldout_fraction: float, salt: str = SPLIT_SALT,
             heldout_families: Iterable[str] = ()) -> str:
    """`heldout_family` for a chain with an op of `heldout_families`; else `heldout` for about
    `heldout_fraction` of all signatures, chosen by a salted sha256; else `train`."""
    if not 0.0 <= heldout_fraction <= 1.0:
        raise ValueError(f"heldout_fraction must be in [0, 1], not {heldout_fraction}")
    if heldout_families and not family_ops(heldout_families).isdisjoint(signature.split(">")):
        return HELDOUT_FAMILY
    h = int(hashlib.sha256(f"{salt}:{signature}".encode()).hexdigest()[:15], 16) / 16**15
    return HELDOUT if h < heldout_fraction else TRAIN


def shared_signatures(rows: Iterable[dict[str, Any]]) -> set[str]:
    """Signatures found in more than one split of `rows` (dicts with `signature` and `split`): must be empty."""
    sides: dict[str, set[str]] = {}
    for row in rows:
        sides.setdefault(row["signature"], set()).add(row["split"])
    return {sig for sig, splits in sides.items() if len(splits) > 1}


@dataclass
class OverlapReport:
    """Pairs (generated task id, evaluation task id) that match, by each measure."""

    generated: int
    evaluated: int
    threshold: float
    exact: list[tuple[str, str]] = field(default_factory=list)
    same_calls: list[tuple[str, str]] = field(default_factory=list)
    near: list[tuple[str, str, float]] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)  # evaluation tasks that do not parse

    def overlapping_ids(self) -> set[str]:
        """Generated task ids that match an evaluation task by any measure."""
        return {g for g, _ in self.exact} | {g for g, _ in self.same_calls} | {g for g, _, _ in self.near}

    def summary(self) -> dict[str, Any]:
        return {"generated": self.generated, "evaluated": self.evaluated, "threshold": self.threshold,
                "exact": len(self.exact), "same_calls": len(self.same_calls), "near": len(self.near),
                "generated_overlapping": len(self.overlapping_ids()), "unparsed_eval": len(self.unparsed),
                "examples": {"exact": self.exact[:5], "same_calls": self.same_calls[:5],
                             "near": [(g, e, round(s, 3)) for g, e, s in self.near[:5]]}}

    def table(self) -> Table:
        t = Table(title=f"Overlap: {self.generated} generated vs {self.evaluated} evaluation tasks")
        for name in ("measure", "pairs", "generated tasks", "example"):
            t.add_column(name)
        for measure, pairs in (("same normalised AST", self.exact), ("same torch call chain", self.same_calls),
                               (f"5-gram Jaccard >= {self.threshold}", self.near)):
            example = f"{pairs[0][0]} ~ {pairs[0][1]}" if pairs else "-"
            t.add_row(measure, str(len(pairs)), str(len({p[0] for p in pairs})), example)
        return t


class EvalIndex:
    """Fingerprints of an evaluation set, for rejecting generated tasks that match one of its tasks
    by normalised AST or by torch call chain (decontamination at generation time)."""

    def __init__(self, evaluation: Sequence[Task]) -> None:
        self.by_hash: dict[str, str] = {}
        self.by_calls: dict[tuple[str, ...], str] = {}
        for t in evaluation:
            try:
                self.by_hash.setdefault(code_hash(t.source), t.task_id)
                calls = call_chain(t.source)
            except SyntaxError:
                continue
            if calls:
                self.by_calls.setdefault(calls, t.task_id)

    def __len__(self) -> int:
        return len(self.by_hash)

    def match(self, source: str) -> str:
        """Why `source` overlaps the evaluation set ("" when it does not)."""
        hit = self.by_hash.get(code_hash(source))
        if hit:
            return f"same normalised code as evaluation task {hit}"
        hit = self.by_calls.get(call_chain(source))
        return f"same torch call chain as evaluation task {hit}" if hit else ""


def overlap_report(generated: Sequence[Task], evaluation: Sequence[Task], threshold: float = 0.8) -> OverlapReport:
    """Match every generated task against every evaluation task (see the module docstring)."""
    report = OverlapReport(len(generated), len(evaluation), threshold)
    prints = []
    for t in evaluation:
        try:
            prints.append((t.task_id, code_hash(t.source), call_chain(t.source), shingles(t.source)))
        except SyntaxError:
            report.unparsed.append(t.task_id)
    by_hash: dict[str, list[str]] = {}
    by_calls: dict[tuple[str, ...], list[str]] = {}
    for task_id, digest, calls, _ in prints:
        by_hash.setdefault(digest, []).append(task_id)
        if calls:
            by_calls.setdefault(calls, []).append(task_id)
    for g in generated:
        digest, calls, grams = code_hash(g.source), call_chain(g.source), shingles(g.source)
        report.exact += [(g.task_id, e) for e in by_hash.get(digest, [])]
        report.same_calls += [(g.task_id, e) for e in by_calls.get(calls, [])]
        for task_id, _, _, other in prints:
            score = jaccard(grams, other)
            if score >= threshold:
                report.near.append((g.task_id, task_id, score))
    return report
