"""The `Task` type: a KernelBench-style module source plus where it came from.

A task source defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`, which read
module-level size constants at call time. The same file runs at its real size (GPU) or at a small
size (CPU interpreter) by overriding those constants after the module is executed: explicitly
through a module-level `KERNELGYM_SMALL = {...}` dict, else by the shrinking rules of
`kernelgym.tasks.small` (which also caps the small size's elements and FLOPs).
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass, field

from kernelgym.ast_parse import parse as parse_source
from kernelgym.tasks.base import SMALL_OVERRIDES_NAME, TaskError  # noqa: F401 (re-exported)

REQUIRED_NAMES = ("Model", "get_inputs", "get_init_inputs")
SIZES = ("full", "small")


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

    def small_overrides(self) -> dict[str, object]:
        """Constant overrides for the small size (`kernelgym.tasks.small`). Raises `TaskError`,
        `TaskTooLarge` for a task that cannot be made small."""
        return self.small_plan().constants

    def small_plan(self):  # noqa: ANN201 (SmallPlan; kernelgym.tasks.small imports this module)
        """How this task shrinks to its small size and its estimated footprint there (cached)."""
        from kernelgym.tasks.small import small_plan

        try:
            return small_plan(self.source, self.task_id)
        except SyntaxError as e:
            raise TaskError(f"task {self.task_id}: source does not parse: {e}") from None

    def load_module(self, size: str = "full", overrides: dict[str, object] | None = None) -> types.ModuleType:
        """Execute the source in a fresh module and apply the size's overrides, then `overrides`
        (a hidden variant's constants, RH-15/RH-16). Raises `TaskError`."""
        if size not in SIZES:
            raise ValueError(f"size must be one of {SIZES}, not {size!r}")
        self.validate()
        module = types.ModuleType(f"kernelgym_task_{_safe(self.task_id)}")
        module.__file__ = f"<task {self.task_id}>"
        code: str | ast.Module = self.source
        if size == "small":
            from kernelgym.tasks.small import small_code

            plan = self.small_plan()
            code = small_code(self.source, plan)
        try:
            exec(compile(code, module.__file__, "exec"), module.__dict__)
        except Exception as e:  # a task file that cannot even execute is a task error, not our bug
            raise TaskError(f"task {self.task_id}: executing its source failed: {type(e).__name__}: {e}") from None
        if size == "small":
            module.__dict__.update(plan.constants)
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
    needed, todo = set(), ["get_inputs", SMALL_OVERRIDES_NAME, "KERNELGYM_SMALL_LEVEL"]
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
    return ast.unparse(ast.Module(body=kept + stubs + _small_level(source), type_ignores=[]))


def _small_level(source: str) -> list[ast.stmt]:
    """The small size's level, chosen from the full source (the stripped one has no model to
    estimate it from), as a statement for the stripped source; none where the task cannot be made
    small (its reference fails first)."""
    from kernelgym.tasks.small import SMALL_LEVEL_NAME, small_plan

    try:
        plan = small_plan(source)
    except (TaskError, SyntaxError):
        return []
    return parse_source(f"{SMALL_LEVEL_NAME} = ({plan.level}, {plan.structure})\n").body


def _bound_names(node: ast.stmt) -> list[str]:
    """Top-level names a statement binds (imports excepted: they are always kept)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return [n.id for t in targets if t is not None for n in ast.walk(t) if isinstance(n, ast.Name)]


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in s)
