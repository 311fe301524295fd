"""Hidden variants of a task (RH-15, RH-16): the task's module constants changed by amounts drawn
from the judge's secret seed, so an answer specialised to the published shapes or to the task
file's init constants fails a trial it cannot anticipate.

A variant is a dict of constant overrides applied after the size's own (`Task.load_module`).
By default the judge tries, in order (it runs the first the reference can run):

  1. one size constant (an integer `get_inputs` reaches) GROWN by an odd amount, up to 1.5x, the
     structure constants (integers only `get_init_inputs` reads: kernel sizes, strides, padding,
     feature counts) moved by a secret step, and every float constant that either input function
     reaches (a slope, an eps, a clamp bound) scaled by a secret factor: an answer that computes only
     as much as the published size, or hard-codes a kernel size, fails it;
  2. the same growth without the structure change (the reference may reject it: groups that no
     longer divide the channels);
  3. every size constant shrunk, then one each (the earlier rule), for tasks that cannot grow.

Growth is bounded: the variant's footprint, estimated on the meta device like the small size's
(`tasks.small.estimate`), may be at most `GROWTH_ELEMENTS` times the size's own elements and
`GROWTH_FLOPS` times its FLOPs; a task whose footprint cannot be estimated does not grow. Small
integers that name an axis (`dim`, `axis` at most 4) and integers below 2 are never moved.
A task can replace all this with a module-level literal `KERNELGYM_VARIANTS`: a list of override
dicts (both sizes) or a dict `{"small": [...], "full": [...]}`; an empty list turns variants off.
"""

from __future__ import annotations

import ast
import random

from kernelgym.ast_parse import parse as parse_source
from kernelgym.tasks.task import Task, TaskError

VARIANTS_NAME = "KERNELGYM_VARIANTS"
_FLOAT_FACTORS = (1.5, 2.5)  # |slope|, eps, bounds scaled by a factor in this range


GROWTH_ELEMENTS = 2.0  # a grown variant's footprint may be this many times the size's elements
GROWTH_FLOPS = 4.0  # ... and this many times its FLOPs (a square matmul grown 1.5x: 3.4x)
_AXIS_NAMES = ("dim", "axis")


def candidate_variants(task: Task, size: str, rng: random.Random, attempts: int = 3) -> list[dict[str, object]]:
    """Up to `attempts` variants, in the order the judge should try them (it skips those the
    reference cannot run): grown ones first, then shrunk ones (module docstring)."""
    tree = parse_source(task.source)
    declared = _declared(tree, size, task.task_id)
    if declared is not None:
        order = list(declared)
        rng.shuffle(order)
        return order[:attempts]
    base = task.load_module(size)
    sizes, reached = _perturbable(tree)
    float_part = {name: _scaled(base.__dict__[name], rng) for name in sorted(reached)
                  if type(base.__dict__.get(name)) is float and base.__dict__[name] != 0.0}
    ints = {name: base.__dict__[name] for name in sorted(sizes) if type(base.__dict__.get(name)) is int
            and base.__dict__[name] >= 2}
    structure = {name: _moved(v, rng) for name in sorted(reached - sizes)
                 if type(v := base.__dict__.get(name)) is int and v >= 2
                 and not (v <= 4 and any(a in name.lower() for a in _AXIS_NAMES))}
    grown = _grown(task, size, ints, structure | float_part, rng)
    if not ints and not float_part and not grown:
        return []
    everything = {name: _shrunk(v, rng) for name, v in ints.items()} | float_part
    singles = [{name: _shrunk(v, rng)} | float_part for name, v in ints.items()]
    rng.shuffle(singles)
    shrunk = [everything] + singles if ints or float_part else []
    return (grown + shrunk)[:attempts]


def _grown(task: Task, size: str, ints: dict[str, int], changes: dict[str, object],
           rng: random.Random) -> list[dict[str, object]]:
    """[one size grown with `changes`, the same size grown alone], for the first size (in a secret
    order) whose growth fits the footprint budget; [] when none does or it cannot be estimated."""
    from kernelgym.tasks.small import SmallPlan, estimate

    plan = task.small_plan() if size == "small" else SmallPlan({}, 0, 0)

    def footprint(overrides: dict[str, object]) -> tuple[int, int]:
        return estimate(task.source, SmallPlan(plan.constants | overrides, plan.level, plan.structure))

    try:
        elements, flops = footprint({})
    except Exception:  # not estimable on the meta device: no growth
        return []
    names = list(ints)
    rng.shuffle(names)
    out: list[dict[str, object]] = []
    for name in names:
        one = {name: _grown_size(ints[name], rng)}
        for candidate in ([one | changes, one] if changes else [one]):
            try:
                e, f = footprint(candidate)
            except Exception:  # the reference may reject it too: the judge falls back
                continue
            if e <= GROWTH_ELEMENTS * elements and f <= GROWTH_FLOPS * max(flops, 1):
                out.append(candidate)
        if out:
            return out
    return [changes] if changes else []


def _grown_size(v: int, rng: random.Random) -> int:
    """A size larger than `v` by an odd amount, up to about 1.5x: past every published bound and
    off any power of two the published size has."""
    return v + 2 * rng.randint(0, max(0, v // 4)) + 1


def _moved(v: int, rng: random.Random) -> int:
    """A structure integer moved by a secret step: kernel sizes and strides by one either way, feature
    counts (16 and up) by an odd amount either way, up to a quarter of them."""
    if v < 16:
        return v + rng.choice((-1, 1))
    step = 2 * rng.randint(0, max(0, v // 8)) + 1
    return v + step if rng.random() < 0.5 else max(2, v - step)


def _shrunk(v: int, rng: random.Random) -> int:
    """A size a little smaller than `v` (the fallback when the task cannot grow)."""
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
