"""Whole-module facts the contract's rules need before they visit anything: imports, kernels
(however `triton.jit` is applied), helpers and their parameters, classes and what `__init__`
stores on `self`, functions nothing references (they never run), and the kinds that flow
between call sites and helpers (refined by `update` until they settle)."""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field

from kernelgym.judge.contract import CODE_DECORATORS, KERNEL_DECORATORS
from kernelgym.judge.static_types import (
    ARGS, CLASS, FUNC, KERNEL, NONE, SELF, STATE, Kind, ModuleFacts, Scope, S, T, join, resolve,
)

_CONTAINER_NODES = (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)


@functools.cache
def _module_api() -> frozenset[str]:
    import torch

    return frozenset(dir(torch.nn.Module))


@dataclass
class ModuleScan:
    facts: ModuleFacts = field(default_factory=ModuleFacts)
    kernels: dict[str, None] = field(default_factory=dict)  # ordered set of kernel function names
    classes: set[str] = field(default_factory=set)
    cached: set[str] = field(default_factory=set)  # keys of @lru_cache / @cache helpers
    dead: set[str] = field(default_factory=set)  # module-level functions nothing references
    escaped: set[str] = field(default_factory=set)  # functions used as values: their parameters can be anything
    static: set[str] = field(default_factory=set)  # @staticmethod keys
    param_names: dict[str, list[str]] = field(default_factory=dict)
    parents: dict[ast.AST, ast.AST] = field(default_factory=dict)
    # functions and lambdas Triton hands a launch's arguments (grids, heuristics, autotune pruning and
    # hooks) -> the kernel they serve ("" when unknown)
    grids: dict[str, str] = field(default_factory=dict)
    class_nodes: dict[str, ast.ClassDef] = field(default_factory=dict)

    @property
    def module_api(self) -> frozenset[str]:
        return _module_api()

    def context_of(self, key: str, outer: str, cls: str | None, name: str) -> str:
        if key in self.kernels:
            return "kernel"
        if cls and name == "__init__" and outer == "module":
            return "init"
        return "cached" if key in self.cached else "code"

    def param_kinds(self, key: str, node: ast.AST, cls: str | None, context: str) -> dict[str, Kind]:
        args = node.args
        names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        if args.vararg:
            names.append(args.vararg.arg)
        if args.kwarg:
            names.append(args.kwarg.arg)
        kinds: dict[str, Kind] = {}
        is_method = bool(cls) and key not in self.static and not isinstance(node, ast.Lambda)
        rest = names[1:] if is_method and names else names
        if is_method and names:
            kinds[names[0]] = Kind(SELF)
        known = self.facts.params.get(key)
        if key in self.grids:
            kinds.update(self._launch_param_kinds(self.grids[key], rest))
            for n, k in zip(rest, known or []):  # also called directly: what that call passes too
                kinds[n] = join(kinds[n], k)
            return kinds
        if context == "init" and cls and cls != "ModelNew" and known is not None:
            # the answer's own submodule: its __init__ takes what the answer passes where it builds it
            kinds.update({n: (S if k.kind == NONE else k) for n, k in zip(rest, known)})
            kinds.update({n: S for n in rest[len(known):]})
            return kinds
        if context in ("kernel", "init"):
            kinds.update({n: S for n in rest})
            return kinds
        if is_method and self._overrides(cls, key.split(".")[-1]):
            known = None  # self.<name>(...) in a base's method runs this override: its call sites are not all seen
        if key in self.escaped or known is None or key.endswith(".forward") or isinstance(node, ast.Lambda):
            kinds.update({n: T for n in rest})
        else:
            kinds.update({n: (T if k.kind == NONE else k) for n, k in zip(rest, known)})
            kinds.update({n: T for n in rest[len(known):]})
        if args.vararg:
            kinds[args.vararg.arg] = T
        return kinds

    def _launch_param_kinds(self, kernel: str, names: list[str]) -> dict[str, Kind]:
        """A parameter named after one of the kernel's takes what the launches pass for it (perf_model
        is called with the arguments by name); any other is the launch's argument dict (or configs)."""
        params = self.facts.kernel_params.get(kernel, [])
        out = {}
        for n in names:
            if n in params:
                out[n] = Scope(self.facts, None).launch_arg(kernel, ast.Constant(n))
            else:
                out[n] = Kind(ARGS, kernel)
        return out

    def _overrides(self, cls: str, name: str) -> bool:
        return any(name in self.facts.methods.get(c, set()) for c in self.facts.lineage(cls)[1:])

    def update(self, call_kinds: dict[str, list[Kind]], return_kinds: dict[str, Kind], grids: dict[str, str],
               default_kinds: dict[str, list[Kind | None]], state_tensor: bool) -> bool:
        changed = grids != self.grids or call_kinds != self.facts.params or return_kinds != self.facts.returns or \
            default_kinds != self.facts.defaults or state_tensor != self.facts.state_tensor
        inits = {c for c in self.class_nodes if c != "ModelNew" and
                 call_kinds.get(f"{c}.__init__") != self.facts.params.get(f"{c}.__init__")}
        self.grids = dict(grids)
        self.facts.params = dict(call_kinds)
        self.facts.returns = dict(return_kinds)
        self.facts.defaults = dict(default_kinds)
        self.facts.state_tensor = self.facts.state_tensor or state_tensor
        for c in inits:  # what __init__ stores on self follows what it is passed
            _scan_class(self, self.class_nodes[c])
        return changed


def scan_module(tree: ast.Module) -> ModuleScan:
    scan = ModuleScan()
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            scan.parents[child] = node
    aliases = scan.facts.aliases
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module or ''}.{a.name}"
    for stmt in _module_statements(tree.body):  # `jit = triton.jit`, `la = torch.linalg`: aliases of a path
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            path = resolve(stmt.value, aliases)
            if path is not None:
                aliases[stmt.targets[0].id] = path
    g = scan.facts.globals
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            g[stmt.name] = Kind(FUNC, stmt.name)
            paths = {_decorator_path(d, aliases) for d in stmt.decorator_list}
            if paths & KERNEL_DECORATORS:
                scan.kernels[stmt.name] = None
                g[stmt.name] = Kind(KERNEL, stmt.name)
            if paths & {"functools.lru_cache", "functools.cache"}:
                scan.cached.add(stmt.name)
            _register_function(scan, stmt, stmt.name, cls=None)
        elif isinstance(stmt, ast.ClassDef):
            g[stmt.name] = Kind(CLASS, stmt.name)
            scan.classes.add(stmt.name)
            scan.class_nodes[stmt.name] = stmt
    for name in scan.kernels:
        scan.facts.kernel_params[name] = scan.param_names.get(name, [])
    for stmt in _module_statements(tree.body):  # kernels made by calling triton.jit and friends
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call):
            fn = _jit_applied(stmt.value, aliases)
            if fn is not None:
                scan.kernels.setdefault(fn, None)
                scan.facts.kernel_params[fn] = scan.param_names.get(fn, [])
                g[fn] = Kind(KERNEL, fn)
                for t in stmt.targets:
                    if isinstance(t, ast.Name):
                        g[t.id] = Kind(KERNEL, fn)
    module_scope = Scope(scan.facts, None)
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            kind = Kind(STATE) if _is_container(stmt.value) else module_scope.kind(stmt.value)
            if kind.kind == STATE and not module_scope.kind(stmt.value).scalar:
                scan.facts.state_tensor = True  # a container built holding what may be a tensor
            for t in targets:
                if isinstance(t, ast.Name) and g.get(t.id, Kind(NONE)).kind != KERNEL:
                    g[t.id] = kind
    _find_modules(scan, [s for s in _module_statements(tree.body) if isinstance(s, ast.ClassDef)])
    for stmt in _module_statements(tree.body):
        if isinstance(stmt, ast.ClassDef):
            _scan_class(scan, stmt)
    _find_references(scan, tree)
    return scan


def _module_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Top-level statements, including those under module-level `if` blocks (not the main guard)."""
    out = []
    for stmt in body:
        if isinstance(stmt, ast.If):
            test = stmt.test
            if isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__":
                continue
            out.extend(_module_statements(stmt.body) + _module_statements(stmt.orelse))
        else:
            out.append(stmt)
    return out


def _register_function(scan: ModuleScan, node: ast.AST, key: str, cls: str | None) -> None:
    args = node.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    is_static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in getattr(node, "decorator_list", []))
    if is_static:
        scan.static.add(key)
    scan.param_names[key] = names[1:] if cls and not is_static and names else names
    for sub in ast.walk(node):
        if sub is not node and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                _enclosing_function(scan, sub) is node:
            _register_function(scan, sub, f"{key}.{sub.name}", cls=None)


def default_nodes(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr | None]:
    """Each parameter's default expression (None: none), in `param_names` order before dropping self."""
    args = node.args
    positional = args.posonlyargs + args.args
    pos_defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    return pos_defaults + list(args.kw_defaults)


def _enclosing_function(scan: ModuleScan, node: ast.AST) -> ast.AST | None:
    parent = scan.parents.get(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        parent = scan.parents.get(parent)
    return parent


def _find_modules(scan: ModuleScan, classes: list[ast.ClassDef]) -> None:
    """The answer's classes that derive from nn.Module through answer classes only: calling an
    instance runs the answer's forward. A class with a torch layer (or any other) base is a layer."""
    modules = scan.facts.modules
    changed = True
    while changed:
        changed = False
        for node in classes:
            if node.name in modules or not node.bases:
                continue
            paths = [resolve(b, scan.facts.aliases) for b in node.bases]
            own = [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in modules]
            if all(p == "torch.nn.Module" or (isinstance(b, ast.Name) and b.id in modules)
                   for p, b in zip(paths, node.bases)):
                modules[node.name] = own
                changed = True


def _scan_class(scan: ModuleScan, node: ast.ClassDef) -> None:
    attrs: dict[str, Kind] = {}
    methods: set[str] = set()
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            methods.add(stmt.name)
            if any(_decorator_path(d, scan.facts.aliases) in CODE_DECORATORS and "functools" in
                   _decorator_path(d, scan.facts.aliases) for d in stmt.decorator_list):
                scan.cached.add(f"{node.name}.{stmt.name}")
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            # A class-level dict/list display is a container every instance shares: like one at
            # module level, reading it is fine and storing into it keeps state (RH-11).
            kind = Kind(STATE) if _is_container(stmt.value) else S
            for t in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                if isinstance(t, ast.Name):
                    attrs[t.id] = kind
    scan.facts.methods[node.name] = methods
    scan.facts.self_attrs[node.name] = attrs
    for stmt in node.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _register_function(scan, stmt, f"{node.name}.{stmt.name}", cls=node.name)
    init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return
    scope = Scope(scan.facts, node.name)
    names = [a.arg for a in init.args.args]
    if names:
        scope.local[names[0]] = Kind(SELF)
    passed = scan.facts.params.get(f"{node.name}.__init__", []) if node.name != "ModelNew" else []
    for i, n in enumerate(names[1:] + [a.arg for a in init.args.kwonlyargs]):
        k = passed[i] if i < len(passed) else Kind(NONE)
        scope.local[n] = S if k.kind == NONE else k
    for _ in range(2):
        for sub in ast.walk(init):
            if isinstance(sub, ast.Assign):
                kind = Kind(STATE) if _is_container(sub.value) else scope.kind(sub.value)
                if kind.kind == STATE and not scope.kind(sub.value).scalar:
                    scan.facts.state_tensor = True
                for t in sub.targets:
                    attr = _self_attr(t)
                    if attr:
                        attrs[attr] = kind if attr not in attrs or attrs[attr] == kind else join(attrs[attr], kind)
                    elif isinstance(t, ast.Name):
                        scope.bind(t, kind)
            elif isinstance(sub, (ast.Assign, ast.For, ast.AugAssign, ast.AnnAssign, ast.With, ast.NamedExpr)):
                pass
            if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, ast.Store) and _self_attr(sub) and \
                    not _plain_self_store(scan, sub):
                attrs[sub.attr] = T  # tuple targets, loop targets, with-as: not typed, so anything
            if isinstance(sub, ast.AnnAssign) and sub.value is not None:
                attr = _self_attr(sub.target)
                if attr:
                    attrs[attr] = Kind(STATE) if _is_container(sub.value) else scope.kind(sub.value)
            elif isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                    sub.func.attr in ("register_buffer", "register_parameter") and sub.args and \
                    isinstance(sub.args[0], ast.Constant) and isinstance(sub.args[0].value, str):
                attrs[sub.args[0].value] = T


def _plain_self_store(scan: ModuleScan, node: ast.Attribute) -> bool:
    parent = scan.parents.get(node)
    return isinstance(parent, (ast.Assign, ast.AnnAssign)) and (
        (isinstance(parent, ast.AnnAssign) and parent.target is node)
        or (isinstance(parent, ast.Assign) and node in parent.targets))


def _self_attr(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def _is_container(node: ast.AST) -> bool:
    if isinstance(node, _CONTAINER_NODES):
        return True
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("list", "dict", "set"):
        return True
    return False


def _decorator_path(dec: ast.AST, aliases: dict[str, str]) -> str:
    target = dec.func if isinstance(dec, ast.Call) else dec
    if isinstance(target, ast.Name) and target.id == "staticmethod":
        return "staticmethod"
    return resolve(target, aliases) or ""


def _jit_applied(call: ast.Call, aliases: dict[str, str]) -> str | None:
    """`triton.jit(f)`, `triton.autotune(...)(f)`, `jit(f)`: the name of the function made a kernel."""
    func = call.func
    path = _decorator_path(func, aliases)
    if path in KERNEL_DECORATORS and call.args and isinstance(call.args[0], ast.Name):
        if not isinstance(func, ast.Call) and path != "triton.jit":
            return None  # autotune(f) without configs is not a kernel application
        return call.args[0].id
    if isinstance(func, ast.Call):
        inner = _jit_applied(func, aliases)
        if inner is None and call.args and isinstance(call.args[0], ast.Name) and \
                _decorator_path(func.func, aliases) in KERNEL_DECORATORS:
            return call.args[0].id
        if inner is not None:
            return inner
    if call.args and isinstance(call.args[0], ast.Call):
        return _jit_applied(call.args[0], aliases) if path in KERNEL_DECORATORS else None
    return None


def _find_references(scan: ModuleScan, tree: ast.Module) -> None:
    """Module functions never named anywhere are dead; functions named other than as a callee escape."""
    loaded: dict[str, list[ast.AST]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            loaded.setdefault(node.id, []).append(node)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            loaded.setdefault("." + node.attr, []).append(node)
    for name, kind in scan.facts.globals.items():
        if kind.kind in (FUNC, KERNEL) and kind.name == name and name not in loaded:
            scan.dead.add(name)
    keys = list(scan.param_names)
    for key in keys:
        short = key.split(".")[-1]
        refs = loaded.get(short, []) + loaded.get("." + short, [])
        for ref in refs:
            parent = scan.parents.get(ref)
            if isinstance(parent, ast.Call) and parent.func is ref:
                continue
            if isinstance(parent, ast.Subscript) and parent.value is ref:
                continue  # a kernel launch
            scan.escaped.add(key)
