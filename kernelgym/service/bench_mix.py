"""The mixed batch `kernelgym bench service` judges: what an RL step's answers look like.

Made from the built-in answers by AST edits, so every kind is a real Triton answer that reaches
the stage it is meant to fail at: 50 % correct, 20 % wrong outputs (every stored value scaled and
shifted), 15 % compile errors (a call to a `tl` function that does not exist, found at JIT time),
10 % crashes (every store pointer moved 10**12 elements away: an illegal address on a GPU) and
5 % timeouts (`forward` never returns).

`build_training_mix` makes the same kinds from a cold-start corpus instead (`kernelgym data
coldstart`): generated tasks at the sizes training uses, their verified answers as the correct ones,
a few answers per task as an RL group has; each item carries its task's source.
"""

from __future__ import annotations

import ast
import json
import random
from dataclasses import dataclass
from pathlib import Path

from kernelgym.tasks.loaders import builtin_answer_path, builtin_task_ids

# (kind, share, expected statuses) in the proportions of the issue.
MIX = (
    ("correct", 0.50, ("ok",)),
    ("wrong_output", 0.20, ("wrong_output",)),
    ("compile_error", 0.15, ("compile_error", "runtime_error")),
    ("crash", 0.10, ("crashed", "runtime_error")),
    ("timeout", 0.05, ("timeout",)),
)
EXPECTED = {kind: statuses for kind, _, statuses in MIX}
# Tasks whose outputs are floating point (a scaled store is a wrong value, not a type error) and
# whose answers are quick: the mix measures the service, not the slowest kernels.
DEFAULT_TASKS = ("relu", "gelu", "sigmoid", "silu", "softmax", "log_softmax", "layer_norm", "rms_norm",
                 "tanh_activation", "leaky_relu", "softplus", "hardtanh", "l2_normalize", "mean_reduction_dim",
                 "add_mul_elementwise", "scale_bias_sigmoid")


@dataclass(frozen=True)
class MixItem:
    kind: str
    task_id: str
    answer: str
    task_source: str | None = None  # the task's code where `task_id` is not a built-in task

    @property
    def expected(self) -> tuple[str, ...]:
        return EXPECTED[self.kind]


def build_mix(n: int, seed: int = 0, tasks: tuple[str, ...] = DEFAULT_TASKS) -> list[MixItem]:
    """`n` answers in the MIX proportions (rounded, at least one of each kind when n >= 20),
    spread round-robin over `tasks`, shuffled with `seed`."""
    unknown = sorted(set(tasks) - set(builtin_task_ids()))
    if unknown:
        raise ValueError(f"unknown built-in task(s) for the mix: {', '.join(unknown)}")
    items = [MixItem(kind, tasks[i % len(tasks)], make_variant(builtin_answer_path(tasks[i % len(tasks)]).read_text(),
                                                               kind))
             for i, kind in enumerate(_kinds(n))]
    random.Random(seed).shuffle(items)
    return items


def _kinds(n: int) -> list[str]:
    """`n` kinds in the MIX proportions (rounded, at least one of each when n >= 20)."""
    counts = {kind: round(n * share) for kind, share, _ in MIX}
    if n >= 20:
        counts = {k: max(1, c) for k, c in counts.items()}
    counts["correct"] += n - sum(counts.values())
    return [kind for kind, count in counts.items() for _ in range(max(0, count))]


def build_training_mix(n: int, corpus: Path, seed: int = 0, per_task: int = 8) -> list[MixItem]:
    """`n` answers in the MIX proportions from the train split of a cold-start corpus directory:
    `n / per_task` of its tasks (drawn with `seed`), `per_task` answers each (an RL group's worth,
    so the reference work a service caches per task is shared as in training), each kind made
    from the task's verified answer by `make_variant`."""
    corpus = Path(corpus)
    rows_path, tasks_path = corpus / "train.jsonl", corpus / "tasks" / "train.jsonl"
    if not rows_path.is_file() or not tasks_path.is_file():
        raise ValueError(f"{corpus} is not a cold-start corpus (no train.jsonl and tasks/train.jsonl): "
                         "build one with `kernelgym data coldstart`")
    if per_task < 1:
        raise ValueError("per_task must be at least 1")
    sources = {t["task_id"]: t["code"] for t in map(json.loads, tasks_path.read_text().splitlines()) if t}
    answers: dict[str, str] = {}
    for row in map(json.loads, rows_path.read_text().splitlines()):
        if row.get("kind") == "single" and row["task_id"] in sources:
            answers.setdefault(row["task_id"], row["answer"])
    if not answers:
        raise ValueError(f"{corpus} holds no verified single-turn answers on its train split")
    rng = random.Random(seed)
    chosen = rng.sample(sorted(answers), min(len(answers), max(1, -(-n // per_task))))
    kinds = _kinds(n)
    rng.shuffle(kinds)
    items = [MixItem(kind, chosen[i // per_task % len(chosen)],
                     make_variant(answers[chosen[i // per_task % len(chosen)]], kind),
                     sources[chosen[i // per_task % len(chosen)]]) for i, kind in enumerate(kinds)]
    return items


def make_variant(answer: str, kind: str) -> str:
    """The built-in `answer` turned into one of the MIX kinds."""
    if kind == "correct":
        return answer
    tree = ast.parse(answer)
    if kind == "timeout":
        forward = _model_new_forward(tree)
        forward.body.insert(0, ast.parse("while True:\n    pass").body[0])
    else:
        kernels = [f for f in tree.body if isinstance(f, ast.FunctionDef) and _is_jit(f)]
        if not kernels:
            raise ValueError("the answer defines no @triton.jit kernel")
        if kind == "compile_error":
            # Inside the answer contract (an unknown tl name would be rejected before compiling).
            kernels[0].body.insert(0, ast.parse("tl.static_assert(0 > 1, 'a deliberate compile error')").body[0])
        elif kind in ("wrong_output", "crash"):
            for kernel in kernels:
                _StoreEdit(kind).visit(kernel)
        else:
            raise ValueError(f"unknown mix kind {kind!r}")
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _is_jit(fn: ast.FunctionDef) -> bool:
    return any("jit" in ast.unparse(d) for d in fn.decorator_list)


def _model_new_forward(tree: ast.Module) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    raise ValueError("the answer has no ModelNew.forward")


class _StoreEdit(ast.NodeTransformer):
    """`tl.store(ptr, value, ...)`: scale and shift the value (wrong output) or move the pointer
    far out of bounds (crash)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        if ast.unparse(node.func) == "tl.store" and len(node.args) >= 2:
            if self.kind == "wrong_output":
                node.args[1] = ast.parse(f"({ast.unparse(node.args[1])}) * 1.5 + 0.25", mode="eval").body
            else:
                node.args[0] = ast.parse(f"({ast.unparse(node.args[0])}) + 10**12", mode="eval").body
        return node
