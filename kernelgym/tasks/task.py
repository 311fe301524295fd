"""The `Task` type: a KernelBench-style module source plus where it came from.

A task source defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`, which read
module-level size constants at call time. The same file runs at its real size (GPU) or at a small
size (CPU interpreter) by overriding those constants after the module is executed: explicitly
through a module-level `KERNELGYM_SMALL = {...}` dict, else by a shrinking heuristic.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, field

from kernelgym.ast_parse import parse as parse_source

SMALL_OVERRIDES_NAME = "KERNELGYM_SMALL"
REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
SIZES = ("full", "small")
_SMALL_CAP = 32  # the heuristic halves integer constants until they are at most this


class TaskError(ValueError):
    """A task source that cannot be used (missing `Model`, broken `get_inputs`, ...)."""


@dataclass(frozen=True)
class Task:
    """One problem: reference source code and metadata. Immutable and cheap to pass around."""

    task_id: str
    source: str
    origin: str = ""  # file path, "kernelbench:<path>", "hf:<dataset>:<split>", ...
    level: int | None = None
    problem_id: int | None = None
    name: str = ""
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def validate(self) -> None:
        """Raise `TaskError` unless the source parses and defines the three required names."""
        try:
            tree = parse_source(self.source)
        except SyntaxError as e:
            raise TaskError(f"task {self.task_id}: source does not parse: {e}") from None
        defined = {n.name for n in tree.body if isinstance(n, (ast.ClassDef, ast.FunctionDef))}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                defined.update(t.id for t in node.targets if isinstance(t, ast.Name))
        missing = [n for n in REQUIRED_NAMES if n not in defined]
        if missing:
            raise TaskError(f"task {self.task_id}: source does not define {', '.join(missing)}")

    def allows_torch_ops(self) -> bool:
        """Whether the task lets torch ops stay beside the answer's Triton kernels (partial
        replacement): a module-level `KERNELGYM_ALLOW_TORCH_OPS = True` in its source. Default False."""
        try:
            tree = parse_source(self.source)
        except SyntaxError:
            return False
        for node in tree.body:
            if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                    and node.targets[0].id == "KERNELGYM_ALLOW_TORCH_OPS" and isinstance(node.value, ast.Constant)):
                return node.value.value is True
        return False

    def small_overrides(self) -> dict[str, int | float]:
        """Constant overrides for the small size: the task's own dict, else the shrinking heuristic."""
        tree = parse_source(self.source)
        constants: dict[str, int] = {}
        for node in tree.body:
            if not isinstance(node, ast.Assign) or len(node.targets) != 1:
                continue
            target = node.targets[0]
            if not isinstance(target, ast.Name):
                continue
            if target.id == SMALL_OVERRIDES_NAME:
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    raise TaskError(f"task {self.task_id}: {SMALL_OVERRIDES_NAME} must be a literal dict") from None
                if not isinstance(value, dict):
                    raise TaskError(f"task {self.task_id}: {SMALL_OVERRIDES_NAME} must be a dict")
                return value
            if isinstance(node.value, ast.Constant) and type(node.value.value) is int:
                constants[target.id] = node.value.value
        return {k: _shrink(v) for k, v in constants.items() if _shrink(v) != v}

    def load_module(self, size: str = "full", overrides: dict[str, object] | None = None) -> types.ModuleType:
        """Execute the source in a fresh module and apply the size's overrides, then `overrides`
        (a hidden variant's constants, RH-15/RH-16). Raises `TaskError`."""
        if size not in SIZES:
            raise ValueError(f"size must be one of {SIZES}, not {size!r}")
        self.validate()
        module = types.ModuleType(f"kernelgym_task_{_safe(self.task_id)}")
        module.__file__ = f"<task {self.task_id}>"
        try:
            exec(compile(self.source, module.__file__, "exec"), module.__dict__)
        except Exception as e:  # a task file that cannot even execute is a task error, not our bug
            raise TaskError(f"task {self.task_id}: executing its source failed: {type(e).__name__}: {e}") from None
        if size == "small":
            module.__dict__.update(self.small_overrides())
        module.__dict__.update(overrides or {})
        return module


def inputs_only_source(source: str) -> str:
    """What the untrusted child may execute to regenerate inputs: the imports, `get_inputs` and
    only the top-level functions and constants it reaches, plus the size overrides. The reference
    `Model`, its helpers, `get_init_inputs`, docstrings and comments are gone (RH-05: nothing of
    the reference is left in the child for an answer to find); inert stubs keep `validate()` happy."""
    tree = parse_source(source)
    defs: dict[str, ast.stmt] = {}
    for node in tree.body:
        for name in _bound_names(node):
            defs.setdefault(name, node)
    needed, todo = set(), ["get_inputs", SMALL_OVERRIDES_NAME]
    while todo:
        name = todo.pop()
        node = defs.get(name)
        if name in needed or node is None or name in ("Model", "get_init_inputs"):
            continue
        needed.add(name)
        todo.extend(n.id for n in ast.walk(node) if isinstance(n, ast.Name))
    kept = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)) or (set(_bound_names(n)) & needed)]
    for node in kept:
        for inner in ast.walk(node):
            body = getattr(inner, "body", None)
            if (isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and len(body) > 1
                    and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)):
                del body[0]  # a docstring may describe the reference
    stubs = parse_source("class Model:\n    pass\n\n\ndef get_init_inputs():\n    return []\n").body
    return ast.unparse(ast.Module(body=kept + stubs, type_ignores=[]))


def _bound_names(node: ast.stmt) -> list[str]:
    """Top-level names a statement binds (imports excepted: they are always kept)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]


def _shrink(v: int) -> int:
    while v > _SMALL_CAP:
        v //= 2
    return v


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s)
