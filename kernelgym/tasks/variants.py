"""Hidden variants of a task (RH-15, RH-16): the task's module constants changed by amounts drawn
from the judge's secret seed, so an answer specialised to the published shapes or to the task
file's init constants fails a trial it cannot anticipate.

A variant is a dict of constant overrides applied after the size's own (`Task.load_module`).
By default every integer constant that `get_inputs` reaches (a size) shrinks by a secret amount,
and every float constant that `get_inputs` or `get_init_inputs` reaches (a slope, an eps, a
clamp bound) is scaled by a secret factor. Integers that only `get_init_inputs` reads (a
reduction axis, a kernel size, a stride) are structure, not size, and stay as they are. A task
can replace the default with a module-level literal `KERNELGYM_VARIANTS`: a list of override dicts
(both sizes) or a dict `{"small": [...], "full": [...]}`; an empty list turns variants off.
"""

from __future__ import annotations

import ast
import random

from kernelgym.ast_parse import parse as parse_source
from kernelgym.tasks.task import Task, TaskError

VARIANTS_NAME = "KERNELGYM_VARIANTS"
_FLOAT_FACTORS = (1.5, 2.5)  # |slope|, eps, bounds scaled by a factor in this range


def candidate_variants(task: Task, size: str, rng: random.Random, attempts: int = 3) -> list[dict[str, object]]:
    """Up to `attempts` variants, in the order the judge should try them (it skips those the
    reference cannot run). The first changes every size constant at once; the fallbacks change
    one each, for tasks whose constants constrain each other (channels divisible by groups)."""
    tree = parse_source(task.source)
    declared = _declared(tree, size, task.task_id)
    if declared is not None:
        order = list(declared)
        rng.shuffle(order)
        return order[:attempts]
    base = task.load_module(size)
    sizes, floats = _perturbable(tree)
    float_part = {name: _scaled(base.__dict__[name], rng) for name in sorted(floats)
                  if type(base.__dict__.get(name)) is float and base.__dict__[name] != 0.0}
    ints = {name: base.__dict__[name] for name in sorted(sizes) if type(base.__dict__.get(name)) is int
            and base.__dict__[name] >= 2}
    if not ints and not float_part:
        return []
    everything = {name: _shrunk(v, rng) for name, v in ints.items()} | float_part
    singles = [{name: _shrunk(v, rng)} | float_part for name, v in ints.items()]
    rng.shuffle(singles)
    return ([everything] + singles)[:attempts]


def _shrunk(v: int, rng: random.Random) -> int:
    """A size a little smaller than `v` (never larger: the full size already fills the GPU)."""
    return v - rng.randint(1, max(1, v // 4))


def _scaled(v: float, rng: random.Random) -> float:
    return v * rng.uniform(*_FLOAT_FACTORS)


def _perturbable(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(names `get_inputs` reaches, names either input function reaches), through helper functions."""
    funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}

    def reached(root: str) -> set[str]:
        seen, todo, names = set(), [root], set()
        while todo:
            fn = funcs.get(todo.pop())
            if fn is None or fn.name in seen:
                continue
            seen.add(fn.name)
            for n in ast.walk(fn):
                if isinstance(n, ast.Name):
                    names.add(n.id)
                    todo.append(n.id)
        return names

    by_inputs = reached("get_inputs")
    return by_inputs, by_inputs | reached("get_init_inputs")


def _declared(tree: ast.Module, size: str, task_id: str) -> list[dict[str, object]] | None:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == VARIANTS_NAME):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                raise TaskError(f"task {task_id}: {VARIANTS_NAME} must be a literal") from None
            if isinstance(value, dict):
                value = value.get(size, [])
            if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
                raise TaskError(f"task {task_id}: {VARIANTS_NAME} must be a list of dicts (or a dict of them by size)")
            return value
    return None
