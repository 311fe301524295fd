"""The import graph of our own packages (kernelgym, rewards), read from the source (AST, nothing
imported): no import cycles, and the worker never imports the service above it."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("kernelgym", "rewards")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports anywhere in its file (also inside functions and
    `if TYPE_CHECKING:`: a cycle of types is still a cycle of concepts)."""
    files = {_module_name(p): p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                # `from pkg import mod` imports the module pkg.mod where there is one
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
            else:
                continue
            edges.update(t for t in targets if t in files and t != name)
        graph[name] = edges
    return graph


def cycles(graph: dict[str, set[str]], members: set[str]) -> list[list[str]]:
    """The strongly connected components of more than one module among `members` (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v] & members:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(members):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_imports_of_every_form():
    graph = import_graph()
    assert "rewards.config" in graph["rewards.functions"]  # from rewards.config import ...
    assert "kernelgym.judge.protocol" in graph["kernelgym.judge.child"]  # from kernelgym.judge import protocol
    assert "kernelgym.judge.forkserver" in graph["kernelgym.judge.sandbox"]  # under TYPE_CHECKING
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, {"a", "b", "c", "d"}) == [["a", "b", "c"]]


def test_no_import_cycle_among_our_modules():
    graph = import_graph()
    assert cycles(graph, set(graph)) == []


def test_the_worker_does_not_import_the_service():
    graph = import_graph()
    upward = {(m, t) for m in graph if m.startswith("kernelgym.worker") for t in graph[m]
              if t.startswith("kernelgym.service")}
    assert upward == set()
