"""The small size of a task: the sizes a CPU runs, derived from the task file without editing it.

A task may declare its small size (`KERNELGYM_SMALL = {...}`, constant overrides). Otherwise the
sizes are shrunk the way KernelBench writes them:

  * module-level constants, evaluated in order: literals, tuples and lists of them and arithmetic
    of them (`N = 2048 * 2`, `M = 1 << 14`, `height = width = 256`, `shape = (32768,)`). A value
    written with constants only is shrunk (each integer halved until it is at most the level); one
    that names other constants (`bias_shape = (out_channels, 1, 1)`) is recomputed from their
    shrunk values, so relations between sizes hold;
  * integer literals written inside `get_inputs`/`get_init_inputs` (`torch.rand(b, 3, 224, 224)`),
    constant sub-expressions folded first.

The level starts at `SMALL_LEVELS[0]` and goes down while the task's estimated footprint at that
size (one forward on the meta device: elements of inputs, outputs, parameters and buffers; matmul
and convolution FLOPs) is over `MAX_SMALL_ELEMENTS` or `MAX_SMALL_FLOPS`. A task that is still over
at the lowest level, or whose model no longer runs once shrunk while its full size is over, raises
`TaskTooLarge`: it is reported, never run at full size by accident.
"""

from __future__ import annotations

import ast
import copy
import functools
import operator
from dataclasses import dataclass
from typing import Any

from kernelgym.ast_parse import parse as parse_source
from kernelgym.tasks.base import SMALL_OVERRIDES_NAME, TaskError

# The level chosen from the full source, written into the sources the judge's child executes (they
# lack the model to estimate from); a task author normally leaves it out.
SMALL_LEVEL_NAME = "KERNELGYM_SMALL_LEVEL"
SMALL_LEVELS = (32, 16, 8, 4)
# (input level, structure level) in the order tried: everything at 32 first (the historic rule), then
# smaller inputs with the structure as it was, then the structure at full size (shrinking channels can
# break a model: groups that no longer divide them, a LayerNorm sized by a channel count).
_CANDIDATES = tuple((lv, 32) for lv in SMALL_LEVELS) + tuple((lv, 0) for lv in SMALL_LEVELS)
MAX_SMALL_ELEMENTS = 1 << 26  # ~256 MB of fp32 over inputs, outputs, parameters and buffers
MAX_SMALL_FLOPS = 1_000_000_000  # one forward; an audit runs ~20 of them per task
INPUT_FUNCTIONS = ("get_inputs", "get_init_inputs")

_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift}


class TaskTooLarge(TaskError):
    """A task that cannot be made small enough for a CPU (see the module docstring)."""


@dataclass(frozen=True)
class SmallPlan:
    """How a task's source becomes its small size, and what that size is estimated to cost."""

    constants: dict[str, Any]  # module-level overrides, applied after the source runs
    level: int  # sizes `get_inputs` reaches are shrunk to at most this; 0: none
    structure: int = 0  # the level of what only `get_init_inputs` reads (channels, groups); 0: none
    elements: int | None = None  # estimated; None where the meta device could not run the model
    flops: int | None = None
    note: str = ""

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable footprint, for audit rows."""
        return {"level": self.level, "structure": self.structure, "elements": self.elements, "flops": self.flops,
                "note": self.note}


def small_plan(source: str, task_id: str = "task") -> SmallPlan:
    """The small size of `source` (cached per source). Raises `TaskTooLarge`, or `TaskError` for a
    `KERNELGYM_SMALL`/`KERNELGYM_SMALL_LEVEL` that is not what it should be."""
    plan = _cached_plan(source)
    if isinstance(plan, TaskError):
        raise type(plan)(f"task {task_id}: {plan}")
    return plan


def small_code(source: str, plan: SmallPlan) -> ast.Module:
    """`source` with the plan's literals inside the input functions shrunk, ready to compile."""
    tree = parse_source(source)
    levels = {"get_inputs": plan.level, "get_init_inputs": plan.structure}
    tree.body = [_LiteralShrinker(levels[n.name]).visit(copy.deepcopy(n))
                 if isinstance(n, ast.FunctionDef) and levels.get(n.name) else n for n in tree.body]
    return ast.fix_missing_locations(tree)


def shrink(value: Any, level: int) -> Any:
    """Each integer of `value` (tuples and lists too) halved until it is at most `level`."""
    if type(value) is int:
        while value > level:
            value //= 2
        return value
    if isinstance(value, (tuple, list)):
        return type(value)(shrink(v, level) for v in value)
    return value


def shrunk_constants(tree: ast.Module, level: int, structure: int) -> dict[str, Any]:
    """Module constants whose value changes (see the module docstring), with their new values:
    those `get_inputs` reaches shrink to `level`, the others (structure) to `structure`."""
    inputs = reached_by_inputs(tree)
    full: dict[str, Any] = {}
    small: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        pairs = _unpack(node)
        if pairs is None:
            continue
        for names, expr in pairs:
            to = level if set(names) & inputs else structure
            try:
                full_value = _evaluate(expr, full)
                small_value = _evaluate(_LiteralShrinker(to).visit(copy.deepcopy(expr)), small) if to else (
                    _evaluate(expr, small))
            except _NotConstant:
                for name in names:  # a later non-constant binding shadows the constant
                    full.pop(name, None)
                    small.pop(name, None)
                continue
            for name in names:
                full[name], small[name] = full_value, small_value
    return {k: v for k, v in small.items() if v != full[k]}


def reached_by_inputs(tree: ast.Module) -> set[str]:
    """Module-level names `get_inputs` reads, through the functions and constants it reads."""
    defs: dict[str, list[ast.AST]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            defs.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        defs.setdefault(n.id, []).append(node.value)
    seen: set[str] = set()
    todo = ["get_inputs"]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo.extend(n.id for d in defs[name] for n in ast.walk(d) if isinstance(n, ast.Name))
    return seen - {"get_inputs"}


def _unpack(node: ast.Assign) -> list[tuple[list[str], ast.expr]] | None:
    """(names, expression) pairs of `a = b = expr` and of `a, b = x, y`; None for other forms."""
    if all(isinstance(t, ast.Name) for t in node.targets):
        names = [t.id for t in node.targets]
        return None if any(n.startswith("KERNELGYM_") for n in names) else [(names, node.value)]
    if (len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) and isinstance(node.value, ast.Tuple)
            and len(node.targets[0].elts) == len(node.value.elts)
            and all(isinstance(t, ast.Name) for t in node.targets[0].elts)):
        return [([t.id], v) for t, v in zip(node.targets[0].elts, node.value.elts)]
    return None


def declared(tree: ast.Module, name: str) -> Any:
    """The literal value a module-level `name = <literal>` assigns; None if there is none.
    Raises `ValueError` if the value is not a literal."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):
            return ast.literal_eval(node.value)
    return None


@functools.lru_cache(maxsize=512)
def _cached_plan(source: str) -> SmallPlan | TaskError:
    tree = parse_source(source)
    try:
        overrides, level = declared(tree, SMALL_OVERRIDES_NAME), declared(tree, SMALL_LEVEL_NAME)
    except ValueError:
        return TaskError(f"{SMALL_OVERRIDES_NAME} must be a literal dict and {SMALL_LEVEL_NAME} a literal int")
    if overrides is not None and not isinstance(overrides, dict):
        return TaskError(f"{SMALL_OVERRIDES_NAME} must be a dict")
    if level is not None:  # chosen from the full source already: no model here to estimate with
        if not (isinstance(level, tuple) and len(level) == 2 and all(type(v) is int and v >= 0 for v in level)):
            return TaskError(f"{SMALL_LEVEL_NAME} must be a pair of ints >= 0 (inputs, structure)")
        if overrides is not None:
            return SmallPlan(dict(overrides), 0)
        return SmallPlan(shrunk_constants(tree, *level), *level)
    if overrides is not None:
        return _checked(source, SmallPlan(dict(overrides), 0), "its KERNELGYM_SMALL sizes")
    smallest, first_error = None, None
    for level, structure in _CANDIDATES:
        plan = SmallPlan(shrunk_constants(tree, level, structure), level, structure)
        try:
            elements, flops = estimate(source, plan)
        except Exception as e:  # the shrunk model does not run (or not on the meta device)
            first_error = first_error or e
            continue
        if elements <= MAX_SMALL_ELEMENTS and flops <= MAX_SMALL_FLOPS:
            return SmallPlan(plan.constants, level, structure, elements, flops)
        if smallest is None or flops < smallest[1]:
            smallest = (elements, flops, level)
    if smallest is None:
        return _unshrinkable(source, SmallPlan(shrunk_constants(tree, *_CANDIDATES[0]), *_CANDIDATES[0]),
                             first_error)
    elements, flops, level = smallest
    return TaskTooLarge(f"cannot be made small: {_footprint(elements, flops)} at best (input sizes at most "
                        f"{level}); the cap is {_footprint(MAX_SMALL_ELEMENTS, MAX_SMALL_FLOPS)}")


def _checked(source: str, plan: SmallPlan, what: str) -> SmallPlan | TaskTooLarge:
    try:
        elements, flops = estimate(source, plan)
    except Exception as e:
        return SmallPlan(plan.constants, 0, note=f"footprint not estimated: {type(e).__name__}: {e}")
    if elements > MAX_SMALL_ELEMENTS or flops > MAX_SMALL_FLOPS:
        return TaskTooLarge(f"cannot be made small: {what} need {_footprint(elements, flops)}; the cap is "
                            f"{_footprint(MAX_SMALL_ELEMENTS, MAX_SMALL_FLOPS)}")
    return SmallPlan(plan.constants, 0, 0, elements, flops)


def _unshrinkable(source: str, plan: SmallPlan, error: Exception) -> SmallPlan | TaskTooLarge:
    """The first shrunk size does not run: keep the full size if it is small enough, else say why."""
    why = f"{type(error).__name__}: {str(error)[:300]}"
    try:
        elements, flops = estimate(source, SmallPlan({}, 0, 0))
    except Exception:  # nor does the full size on meta: the meta device is the problem, not the sizes
        return SmallPlan(plan.constants, plan.level, plan.structure, note=f"footprint not estimated: {why}")
    if elements <= MAX_SMALL_ELEMENTS and flops <= MAX_SMALL_FLOPS:
        return SmallPlan({}, 0, 0, elements, flops, note=f"shrinking breaks the model ({why}); full size is small")
    return TaskTooLarge(f"cannot be made small: the model fails at the shrunk sizes ({why}) and needs "
                        f"{_footprint(elements, flops)} at full size")


def estimate(source: str, plan: SmallPlan) -> tuple[int, int]:
    """(elements, FLOPs) of building the model and one forward at the plan's size, on the meta
    device: nothing is allocated. Raises whatever the task raises there."""
    import types

    import torch
    from torch.utils.flop_counter import FlopCounterMode

    module = types.ModuleType("kernelgym_estimate")
    exec(compile(small_code(source, plan), "<task estimate>", "exec"), module.__dict__)
    module.__dict__.update(plan.constants)
    with torch.device("meta"), torch.no_grad():
        init = module.get_init_inputs()
        inputs = module.get_inputs()
        model = module.Model(*init)
        with FlopCounterMode(display=False) as counter:
            out = model(*inputs)
        tensors = _tensors(inputs) + _tensors(out)
        if isinstance(model, torch.nn.Module):
            tensors += list(model.parameters()) + list(model.buffers())
    return sum(t.numel() for t in tensors), int(counter.get_total_flops())


def _tensors(value: Any) -> list:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)):
        return [t for v in value for t in _tensors(v)]
    return []


def _footprint(elements: int, flops: int) -> str:
    return f"{elements:.3g} elements, {flops:.3g} FLOPs"


class _NotConstant(Exception):
    pass


def _evaluate(node: ast.expr, env: dict[str, Any]) -> Any:
    """The value of a constant expression over `env`; `_NotConstant` for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) in (int, float, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in env:
        return env[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        values = [_evaluate(e, env) for e in node.elts]
        return tuple(values) if isinstance(node, ast.Tuple) else values
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand, env)
        if type(value) not in (int, float):
            raise _NotConstant
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left, right = _evaluate(node.left, env), _evaluate(node.right, env)
        if type(left) not in (int, float) or type(right) not in (int, float):
            raise _NotConstant
        if isinstance(node.op, (ast.Pow, ast.LShift)) and right > 64:
            raise _NotConstant  # no size is written that way; refuse to build huge integers
        try:
            return _BINOPS[type(node.op)](left, right)
        except (ArithmeticError, ValueError):
            raise _NotConstant from None
    raise _NotConstant


def _names(node: ast.expr) -> bool:
    return any(isinstance(n, ast.Name) for n in ast.walk(node))


class _LiteralShrinker(ast.NodeTransformer):
    """Integer literals (and constant integer sub-expressions) above the level, shrunk."""

    def __init__(self, level: int) -> None:
        self.level = level

    def visit_BinOp(self, node: ast.BinOp) -> ast.expr:
        if not _names(node):
            try:
                value = _evaluate(node, {})
            except _NotConstant:
                return self.generic_visit(node)
            if type(value) is int:
                return ast.copy_location(ast.Constant(shrink(value, self.level)), node)
            return node
        return self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> ast.expr:
        if type(node.value) is int and node.value > self.level:
            return ast.copy_location(ast.Constant(shrink(node.value, self.level)), node)
        return node
