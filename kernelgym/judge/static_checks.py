"""The answer contract, applied to the AST before any answer code runs.

An allowlist (`contract`): imports, names, attributes and calls an answer may use, by context.
Anything outside it is a finding. A finding that is a known attack carries its THREATS.md rule
(a `cheat` verdict); anything else outside the contract is an `invalid_answer` naming the
construct and line, so a policy can learn the contract. The rules read exactly the text the
child executes: one decoding (UTF-8; any other coding cookie is refused).
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass, field

from kernelgym.ast_parse import parse as parse_source
from kernelgym.judge import contract as C
from kernelgym.judge.result import CheatVerdict
from kernelgym.judge.static_scan import scan_module
from kernelgym.judge.static_definitions import (
    _CODE, _CONTEXT_MANAGERS, _DUNDER_RULES, _FRAME_ATTRIBUTES, _OPERATOR_DUNDERS, DefinitionRules, _called,
    _dunder, _is_super_call, _isinstance_arg, _lambda_key, _moves_device_only, _precision_rule, _torch_threat,
)
from kernelgym.judge.static_types import (
    _CONSTEXPR_PATHS, CLASS, FUNC, INSTANCE, KERNEL, LAYER, NONE, PATH, SELF, STATE, TENSOR, Kind, Scope, T,
    join,
)


@dataclass
class StaticReport:
    """What the AST says about an answer: its kernels, whether it defines ModelNew, threat
    verdicts (`cheat`) and contract violations (`invalid_answer`), each naming its line."""

    kernels: list[str] = field(default_factory=list)
    has_model_new: bool = False
    verdicts: list[CheatVerdict] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def analyse(code: str, allow_torch_compute: bool = False) -> StaticReport:
    """Apply the contract to `code`. `SyntaxError` propagates: the caller reports it.
    `allow_torch_compute` is the partial-replacement policy: torch compute outside kernels is allowed."""
    cookie = _foreign_coding(code)
    if cookie:
        return StaticReport(violations=[f"line 1: a coding declaration ({cookie}) is not allowed: answers are UTF-8 "
                                        "text and the judge reads them as such"])
    tree = parse_source(code)
    scan = scan_module(tree)
    rules = None
    for _ in range(8):  # parameter and return kinds flow between helpers until they settle
        rules = _Rules(scan, allow_torch_compute, emit=False)
        rules.run(tree)
        if not scan.update(rules.call_kinds, rules.return_kinds, rules.grids, rules.default_kinds,
                           rules.state_tensor):
            break
    rules = _Rules(scan, allow_torch_compute, emit=True)
    rules.run(tree)
    report = StaticReport(kernels=sorted(scan.kernels, key=list(scan.kernels).index),
                          has_model_new="ModelNew" in scan.classes)
    seen: set[tuple[str, str]] = set()
    for v in rules.verdicts:
        if (v.rule, v.reason) not in seen:
            seen.add((v.rule, v.reason))
            report.verdicts.append(v)
    report.violations = list(dict.fromkeys(rules.violations))
    return report


def _foreign_coding(code: str) -> str:
    """A PEP 263 coding declaration naming anything but UTF-8: the interpreter would decode the
    file differently from the text these rules read."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(code.encode("utf-8", errors="surrogatepass")).readline)
    except SyntaxError as e:
        return str(e)[:60]
    return "" if encoding in ("utf-8", "utf-8-sig") else encoding


class _Rules(DefinitionRules):
    """Rules inside function bodies (statements and expressions), on top of the definition rules."""

    # -- statements ---------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:  # nested in a function
        if self.context == "kernel":
            self.outside(node, "a function defined inside a kernel")
            return
        self._function(node, cls=None, key=f"{self.func_key}.{node.name}")

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        if self.context == "kernel":
            self.outside(node, "a lambda inside a kernel")
            return
        self._function(node, cls=None, key=_lambda_key(node))

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.outside(node, "a class defined inside a function")

    def visit_Import(self, node: ast.Import) -> None:
        self._import(node)

    visit_ImportFrom = visit_Import  # type: ignore[assignment]

    def visit_Return(self, node: ast.Return) -> None:
        self._return_kind(node.value)
        self.generic_visit(node)

    def visit_Try(self, node: ast.Try) -> None:
        self.threat("RH-04", node, "try/except is outside the answer contract (it can fall back to torch when a "
                                   "kernel fails)")
        self.generic_visit(node)

    visit_TryStar = visit_Try  # type: ignore[assignment]

    def visit_Global(self, node: ast.Global) -> None:
        self.threat("RH-11", node, "'global' state can cache outputs across calls")

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        self.threat("RH-11", node, "'nonlocal' state can cache outputs across calls")

    def visit_Yield(self, node: ast.AST) -> None:
        self.outside(node, "a generator ('yield')")
        self.generic_visit(node)

    visit_YieldFrom = visit_Yield  # type: ignore[assignment]

    def visit_Break(self, node: ast.AST) -> None:
        if self.context == "kernel":
            self.outside(node, f"'{type(node).__name__.lower()}' inside a kernel (Triton's compiler has no early loop "
                               "exit; it runs only under the CPU interpreter)")

    visit_Continue = visit_Break  # type: ignore[assignment]

    def visit_Match(self, node: ast.AST) -> None:
        self.outside(node, "a 'match' statement")

    def visit_Await(self, node: ast.Await) -> None:
        self.threat("RH-18", node, "'await' is not allowed")
        self.generic_visit(node)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            expr = item.context_expr
            target = expr.func if isinstance(expr, ast.Call) else expr
            kind = self.kind(target)
            if self.context == "kernel" or not (kind.kind == PATH and kind.name in _CONTEXT_MANAGERS):
                if kind.kind == PATH and _torch_threat(kind.name.split(".")[1:]):
                    self.visit(target)
                else:
                    self.outside(node, f"'with {ast.unparse(expr)[:50]}' (allowed: torch.no_grad(), "
                                       "torch.inference_mode(), torch.cuda.device(...))")
            self.visit(expr)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With  # type: ignore[assignment]

    def visit_If(self, node: ast.If) -> None:
        self._test(node.test)
        self.generic_visit(node)

    def visit_While(self, node: ast.While) -> None:
        self._test(node.test)
        self.generic_visit(node)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._test(node.test)
        self.generic_visit(node)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._test(node.test)
        self.generic_visit(node)

    def _test(self, test: ast.AST) -> None:
        if self.context in (*_CODE, "module") and self.kind(test).kind in (TENSOR, LAYER):
            self.compute(test, f"the condition '{ast.unparse(test)[:50]}' reads a tensor's values on the host and")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._store(target, node)
        self.visit(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._store(node.target, node)
        if node.value is not None:
            self.visit(node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        target_kind = self.kind(node.target)
        if target_kind.kind in (TENSOR, LAYER) or self.kind(node.value).kind in (TENSOR, LAYER):
            if isinstance(node.target, ast.Name) or target_kind.kind != STATE:
                self.compute(node, f"'{ast.unparse(node)[:50]}'")
        self._store(node.target, node)
        self.visit(node.value)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._store(target, node)

    def _store(self, target: ast.AST, node: ast.AST) -> None:
        """Where an assignment writes: self and module state outside __init__, libraries, tensors."""
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._store(elt, node)
            return
        if isinstance(target, ast.Starred):
            return self._store(target.value, node)
        if isinstance(target, ast.Name):
            if _dunder(target.id):
                self.threat("RH-20", node, f"assigning '{target.id}' is not allowed")
            return
        if not isinstance(target, (ast.Attribute, ast.Subscript)):
            return
        base = self.kind(target.value)
        self.visit(target.value)
        if isinstance(target, ast.Subscript):
            self.visit(target.slice)
        text = ast.unparse(target)[:50]
        if self.context == "grid":
            self.outside(node, f"the write '{text} = ...' in a grid or heuristics function (it may only compute "
                               "launch sizes)")
            return
        if base.kind == PATH:
            path = f"{base.name}.{target.attr}" if isinstance(target, ast.Attribute) else base.name
            rule = _precision_rule(path) or "RH-20"
            self.threat(rule, node, f"assigning to '{path}' patches a library the judge relies on")
        elif base.kind in (FUNC, KERNEL, CLASS):
            self._state(node, target, f"storing into '{text}'")
        elif base.kind in (SELF, INSTANCE) and self.context not in ("init", "module"):
            self._state(node, target, f"setting '{text}' outside __init__")
        elif base.kind == STATE and self.context in ("init", "module"):
            value = getattr(node, "value", None)
            if value is not None and not self.kind(value).scalar:
                self.state_tensor = True  # what is read from state may now be this tensor
        elif base.kind == STATE:
            value = getattr(node, "value", None)
            if isinstance(target, ast.Subscript) and not isinstance(node, ast.AugAssign) and isinstance(value, ast.Constant):
                return  # a constant stored once (a set-up flag) carries neither an output nor a count
            self._state(node, target, f"storing into '{text}'")
        elif base.kind in (TENSOR, LAYER) and isinstance(target, ast.Attribute):
            self.threat("RH-19", node, f"setting the attribute '{text}' on a tensor or layer")
        elif base.kind == TENSOR and self.context in _CODE and not _local_container(self.scope, target):
            self.compute(node, f"the indexed write '{text} = ...'")

    def _state(self, node: ast.AST, target: ast.AST, what: str) -> None:
        """State kept across calls: a counter tells the harness's phases apart (RH-21), anything else caches (RH-11)."""
        value = getattr(node, "value", None)
        key = ast.dump(target.value if isinstance(target, ast.Subscript) else target)
        counts = value is not None and any(ast.dump(n) == key for n in ast.walk(value))
        if isinstance(node, ast.AugAssign) or counts:
            self.threat("RH-21", node, f"{what} counts calls, which tells correctness calls from timed ones")
        else:
            self.threat("RH-11", node, f"{what} keeps state across calls")

    # -- expressions --------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            return
        name = node.id
        if name == "Model":
            self.threat("RH-05", node, "the answer must not reference the reference class 'Model'")
            return
        found = self.scope.lookup(name)
        if found is not None:
            if found.kind == PATH:
                self._path(node, found.name)
            elif found.kind == CLASS and self.context in _CODE and not self.allow:
                parent = self.scan.parents.get(node)
                method = isinstance(parent, ast.Attribute) and parent.attr in self.scan.facts.methods.get(name, set())
                if not (isinstance(parent, ast.Call) and parent.func is node) and not _isinstance_arg(parent, node) \
                        and not method:
                    self.threat("RH-01", node, f"the class '{name}' taken as a value can be built at call time")
            return
        if _dunder(name):
            self.threat(_DUNDER_RULES.get(name, "RH-20"), node, f"'{name}' is not allowed in an answer")
        elif name in C.THREAT_BUILTINS:
            self.threat(C.THREAT_BUILTINS[name], node, f"'{name}' is not allowed in an answer")
        elif name not in (C.KERNEL_BUILTINS if self.context == "kernel" else C.CODE_BUILTINS):
            where = "in a kernel" if self.context == "kernel" else ""
            self.outside(node, f"the name '{name}' {where}(not imported from an allowed module, defined by the answer, "
                               "or an allowed builtin)".replace("  ", " "))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        base = self.kind(node.value)
        if base.kind == PATH:
            self._path(node, f"{base.name}.{attr}")
            return  # the whole dotted path was judged: its prefixes are not separate uses
        self.visit(node.value)
        if _dunder(attr):
            if attr == "__init__" and _is_super_call(node.value) and self.context == "init":
                return
            if self.allow and attr in _OPERATOR_DUNDERS and attr not in ("__init__", "__call__"):
                return
            self.threat(_DUNDER_RULES.get(attr, "RH-20"), node, f"'.{attr}' is not allowed in an answer")
            return
        if attr in _FRAME_ATTRIBUTES:
            self.threat("RH-09", node, f"'.{attr}' walks the interpreter's frames")
            return
        if attr.startswith("_") and base.kind != SELF:
            self.outside(node, f"the private attribute '.{attr}'")
            return
        if attr in C.THREAT_METHODS:
            rule = C.THREAT_METHODS[attr]
            self.threat(rule, node, f"'.{attr}' is not allowed in an answer")
            return
        if attr in C.ADDRESS_METHODS and self.context != "kernel":
            self.outside(node, f"'.{attr}()': a device address as an integer (pass the tensor to the kernel; "
                               "kernels reach memory only through the pointers they are handed)")
            return
        if self.context == "kernel":
            if attr in C.KERNEL_BANNED_ATTRIBUTES or attr not in C.kernel_value_attributes():
                self.outside(node, f"'.{attr}' on a value inside a kernel (exists only under the CPU interpreter or "
                                   "outside Triton's language)")
            return
        if base.kind == CLASS and attr in self.scan.facts.methods.get(base.name, set()):
            return
        if base.kind in (FUNC, KERNEL, CLASS) and not base.name.startswith("tensor."):
            if base.kind == KERNEL and attr == "warmup":
                self.outside(node, "'.warmup()' and launching the compiled kernel it returns (launch kernels as "
                                   "kernel[grid](...): the judge records launches there)")
            elif base.kind == KERNEL:
                self.threat("RH-01", node, f"'.{attr}' of a kernel reaches its Python function or launcher (launch "
                                           "kernels only as kernel[grid](...))")
            else:
                self.outside(node, f"the attribute '.{attr}' of a function or class")
            return
        if base.kind == TENSOR and attr not in C.TENSOR_ATTRIBUTES and attr not in C.TENSOR_METHODS:
            if self.context == "init" or self.allow:
                return
            if attr == "to" and _moves_device_only(self.scan.parents.get(node), node):
                return  # x.to(x.device): no values change (the run-time audit sees any copy)
            if attr in ("to", "float", "double", "half", "type", "int", "long", "bool"):
                self.compute(node, f"'.{attr}' on a tensor is a cast: cast inside the kernel instead (tl.store "
                                   "converts to the output's dtype) -- the cast")
            else:
                self.compute(node, f"'.{attr}' on a tensor")
        elif base.scalar and base.kind != PATH and self.context in (*_CODE, "module") and \
                _called(self.scan.parents.get(node), node) and attr not in C.SCALAR_METHODS:
            self.outside(node, f"the method '.{attr}()' on a non-tensor value (allowed: "
                               f"{', '.join(sorted(C.SCALAR_METHODS))})")
        elif base.kind == SELF and self.kind(node).kind == PATH:
            self._path(node, self.kind(node).name)  # a torch function stored on self in __init__, used here
        elif base.kind == SELF and self.context in _CODE and attr in self.scan.module_api and \
                attr not in self.scan.facts.self_attrs.get(self.scope.cls or "", {}) and attr != "training":
            self.threat("RH-01", node, f"'self.{attr}' reaches nn.Module machinery (layers, hooks, state) from forward")
        elif base.kind == INSTANCE and self.context in _CODE and attr in self.scan.module_api and \
                self.scan.facts.instance_attr(base.name, attr) is None and attr != "training" and \
                self.scan.facts.find_method(base.name, attr) is None:
            self.threat("RH-01", node, f"'{ast.unparse(node)[:50]}' reaches nn.Module machinery (layers, hooks, "
                                       "state) from forward")
        elif base.kind == LAYER and self.context in _CODE and attr in ("forward", "__call__") and not self.allow:
            self.threat("RH-01", node, f"'.{attr}' of a torch layer runs it instead of a Triton kernel")

    def _path(self, node: ast.AST, path: str) -> None:
        """A dotted path through the imports, judged as a whole."""
        context = "init" if self.allow and self.context in (*_CODE, "module") else self.context
        if self.context == "kernel" and path.split(".")[0] == "torch":
            self.threat("RH-01", node, f"'{path}' inside a kernel body: torch never runs inside a compiled kernel "
                                       "(it works only under the CPU interpreter)")
            return
        if self.context == "module" and path.split(".")[0] == "torch" and path.split(".")[-1] in C.TORCH_ALLOCATION:
            self.threat("RH-11", node, f"'{path}' at import makes a tensor that outlives every call")
            return
        if C.allowed_path(path, context):
            return
        parts = path.split(".")
        rule = _precision_rule(path) or (_torch_threat(parts[1:]) if parts[0] == "torch" else None)
        if rule:
            self.threat(rule, node, f"'{path}' is not allowed in an answer")
        elif self.context in ("dead", "init"):
            self.outside(node, f"'{path}'")
        elif parts[0] == "torch" and self.allow:
            self.outside(node, f"'{path}'")
        elif parts[0] == "torch" and self.context == "module":
            self.threat("RH-01", node, f"'{path}' taken at import is torch compute a helper can call later")
        elif parts[0] == "torch" and self.context in _CODE:
            self.compute(node, f"'{path}'")
        elif parts[0] == "torch" and self.context == "kernel":
            self.threat("RH-01", node, f"'{path}' inside a kernel body")
        else:
            self.outside(node, f"'{path}'")

    def visit_Constant(self, node: ast.Constant) -> None:
        if node.value in ("__exit__", "__aexit__"):
            self.threat("RH-04", node, f"'{node.value}' builds a context manager that can swallow the kernel's failure")

    def visit_Subscript(self, node: ast.Subscript) -> None:
        base = self.kind(node.value)
        if base.kind == KERNEL and isinstance(node.ctx, ast.Load):
            grid = node.slice
            if isinstance(grid, ast.Lambda):
                self.grids[_lambda_key(grid)] = base.name
            elif isinstance(grid, ast.Name):
                k = self.scope.lookup(grid.id)
                if k is not None and k.kind == FUNC and k.name in self.scan.param_names:
                    self.grids[k.name] = base.name
        if self.context in _CODE and self.kind(node.slice).kind in (TENSOR, LAYER) and (
                base.kind in (TENSOR, STATE) or (base.scalar and base.kind != PATH)):
            # A list or shape indexed with a 0-d tensor reads its value through __index__.
            self.compute(node, f"indexing '{ast.unparse(node)[:50]}' with a tensor")
        self.generic_visit(node)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        if self.scope.may_hold_tensor(node.value):
            self.compute(node, f"formatting '{ast.unparse(node.value)[:40]}' in an f-string (the text carries its "
                               "values back to Python)")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and self.context != "kernel":
            self.compute(node, "'@'")
        elif self.kind(node.left).kind in (TENSOR, LAYER) or self.kind(node.right).kind in (TENSOR, LAYER):
            self.compute(node, f"'{ast.unparse(node)[:50]}' on a tensor")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if self.kind(node.operand).kind in (TENSOR, LAYER) and not isinstance(node.op, ast.Not):
            self.compute(node, f"'{ast.unparse(node)[:50]}' on a tensor")
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        sides = [node.left, *node.comparators]
        if not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) and \
                any(self.kind(s).kind in (TENSOR, LAYER) for s in sides):
            self.compute(node, f"the comparison '{ast.unparse(node)[:50]}' on a tensor")
        shape_side = any(isinstance(s, ast.Attribute) and s.attr == "shape" for s in sides)
        literal = any(isinstance(s, ast.Tuple) and len(s.elts) >= 2 and all(isinstance(e, ast.Constant) for e in s.elts)
                      for s in sides)
        if shape_side and literal and self.context != "kernel":
            self.threat("RH-15", node, "branching on a literal shape tuple specialises to the benchmark's sizes")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        callee = self.kind(func)
        args = [self.kind(a) for a in node.args]
        if isinstance(func, ast.Attribute) and func.attr == "forward" and _is_super_call(func.value):
            self.threat("RH-05", node, "super().forward reuses the reference implementation")
        if _is_super_call(node) and (node.keywords or node.args and not (
                len(node.args) == 2 and isinstance(node.args[0], ast.Name) and node.args[0].id in self.scan.classes
                and isinstance(node.args[1], ast.Name) and node.args[1].id == "self")):
            # super(torch.Tensor, t) reaches torch's C base methods (TensorBase.tolist, ...), which neither the
            # static types nor the run-time host-read audit (it cannot patch C types) see.
            self.outside(node, "'super(...)' with arguments other than (an answer class, self)")
        if callee.kind == FUNC and callee.name.startswith("builtin:"):
            self._builtin_call(node, callee.name.split(":", 1)[1], args)
        elif callee.kind == FUNC and not callee.name.startswith(("tensor.", "func.", "kernel.", "class.")):
            if self.context == "grid":
                self.outside(node, f"calling '{ast.unparse(func)[:40]}' from a grid or heuristics function (it is "
                                   "given the launch's tensors; it may only compute launch sizes)")
            elif self.context == "kernel":
                self.outside(node, f"calling the Python function '{ast.unparse(func)[:40]}' inside a kernel (only "
                                   "@triton.jit functions compile on a GPU)")
            if isinstance(func, ast.Attribute) and self.kind(func.value).kind == CLASS and \
                    callee.name not in self.scan.static:
                # ModelNew.method(self, x): the explicit self is no parameter; anything else taken as self
                # is a value the method's body would read under the name `self`
                if args and args[0].kind not in (SELF, INSTANCE):
                    self.compute(node, f"passing '{ast.unparse(node.args[0])[:40]}' as 'self' to "
                                       f"'{ast.unparse(func)[:40]}' (the method reads it as the module) and")
                args = args[1:]
            self._helper_call(node, callee.name, args)
        elif callee.kind == KERNEL and callee.name.endswith("[]"):
            self._helper_call(node, callee.name[:-2], args)  # what the launch passes: its grid and hooks see it
        elif callee.kind == KERNEL and self.context != "kernel":
            self.outside(node, f"calling the kernel '{callee.name}' without a grid (launch it as {callee.name}[grid](...))")
        elif callee.kind == CLASS and self.context == "init":
            self._helper_call(node, f"{callee.name}.__init__", args)  # own submodules: __init__ takes these kinds
        elif callee.kind == CLASS and self.context in _CODE and not self.allow:
            self.threat("RH-01", node, f"building '{callee.name}' at call time runs {callee.name}.__init__ (torch "
                                       "set-up) per call")
        elif callee.kind == CLASS and self.context == "module":
            self.outside(node, f"building '{callee.name}' at import")
        elif callee.kind == INSTANCE and self.context in _CODE:
            forward = self.scan.facts.find_method(callee.name, "forward")
            if forward is not None:  # the answer's own module: its forward is checked like any method
                self._helper_call(node, forward, args)
        elif callee.kind == LAYER and self.context in _CODE and not self.allow:
            self.threat("RH-01", node, f"calling the torch layer '{ast.unparse(func)[:40]}' instead of a Triton kernel")
        elif callee.kind == STATE and isinstance(func, ast.Attribute) and func.attr in C.MUTATING_METHODS and \
                self.context not in ("init", "module"):
            self.threat("RH-11", node, f"'{ast.unparse(func)[:50]}(...)' stores into state kept across calls")
        elif callee.kind == TENSOR and self.context in _CODE and not self.allow:
            self.threat("RH-01", node, f"'{ast.unparse(func)[:40]}(...)' calls a value that is not a kernel launch, "
                                       "a helper of the answer or an allowed function")
        elif (callee.kind == STATE or callee.scalar and callee.kind != PATH) and isinstance(func, ast.Attribute) and \
                func.attr in C.VALUE_READING_METHODS and _reads_tensor(self, node):
            self.compute(node, f"'.{func.attr}(...)' of a tensor")
        elif callee.scalar and callee.kind != PATH and self.context in (*_CODE, "module") and not (
                isinstance(func, ast.Attribute) and func.attr in C.SCALAR_METHODS):
            self.outside(node, f"calling '{ast.unparse(func)[:40]}', a value the contract cannot see is a function "
                               "of the answer, a kernel launch or an allowed function")
        elif callee.kind == PATH and callee.name in _CONSTEXPR_PATHS and self.context in _CODE and \
                _reads_tensor(self, node):
            self.compute(node, f"'{ast.unparse(func)[:30]}(...)' of a tensor (it carries the tensor, its text its "
                               "values) and")
        elif callee.kind == PATH and callee.name.startswith("math.") and self.context in _CODE and \
                any(self.kind(a).kind in (TENSOR, LAYER) for a in [*node.args, *(k.value for k in node.keywords)]):
            self.compute(node, f"'{callee.name}(...)' on a tensor")
        elif callee.kind == PATH and self.context == "cached" and not callee.name.startswith(("math.", "triton.")):
            self.threat("RH-11", node, f"'{callee.name}' inside a cached helper (a cache may only hold integers)")
        self.generic_visit(node)

    def _builtin_call(self, node: ast.Call, name: str, args: list[Kind]) -> None:
        """Builtins that read a tensor's values (sum, float, str, range, ...) compute on the host."""
        if self.context not in _CODE:
            return
        if name == "print" and any(k.arg == "file" for k in node.keywords):
            if _reads_tensor(self, node):
                self.compute(node, "'print(..., file=...)' of a tensor hands its text to answer code and")
            else:
                self.outside(node, "'print(..., file=...)' (print writes to standard output only)")
        elif name == "enumerate":
            if _reads_tensor(self, node, skip=1):  # start= is read through __index__
                self.compute(node, "'enumerate(..., start=<tensor>)'")
        elif name not in C.STRUCTURAL_BUILTINS and _reads_tensor(self, node):
            self.compute(node, f"'{name}(...)' on a tensor")

    def _helper_call(self, node: ast.Call, key: str, args: list[Kind]) -> None:
        """Remember what this call site passes, so the helper's parameters take those kinds."""
        if key in self.scan.cached and any(not a.scalar for a in args):
            self.threat("RH-11", node, "a cached helper called with a tensor keeps outputs across calls")
        params = self.scan.param_names.get(key)
        if params is None:
            return
        # A parameter this call does not pass takes its default (a constant default is no tensor).
        defaults = self.scan.facts.defaults.get(key, [])
        kinds = [d if d is not None else Kind(NONE) for d in defaults[:len(params)]]
        kinds += [Kind(NONE)] * (len(params) - len(kinds))
        for i, a in enumerate(args[:len(params)]):
            kinds[i] = a
        for kw in node.keywords:
            if kw.arg in params:
                kinds[params.index(kw.arg)] = self.kind(kw.value)
        spread = [self.kind(a.value) for a in node.args if isinstance(a, ast.Starred)] + \
            [self.kind(kw.value) for kw in node.keywords if kw.arg is None]
        if len(args) > len(params):
            kinds = [T] * len(params)
        elif spread:  # *args / **kwargs may fill any parameter with what they hold (a dict of sizes: sizes)
            kinds = [join(k, *spread) for k in kinds]
        old = self.call_kinds.get(key)
        self.call_kinds[key] = [join(a, b) for a, b in zip(old, kinds)] if old else kinds

    def visit_comprehension_scope(self, node: ast.AST, generators: list[ast.comprehension]) -> None:
        saved = self.scope
        self.scope = Scope(self.scan.facts, saved.cls, outer=saved)
        for gen in generators:
            self.visit(gen.iter)
            self.scope.bind(gen.target, self.scope.element_kind(gen.iter))
            for cond in gen.ifs:
                self.visit(cond)
        for child in ast.iter_child_nodes(node):
            if not isinstance(child, ast.comprehension):
                self.visit(child)
        self.scope = saved

    def visit_ListComp(self, node: ast.ListComp) -> None:
        self.visit_comprehension_scope(node, node.generators)

    visit_SetComp = visit_GeneratorExp = visit_DictComp = visit_ListComp  # type: ignore[assignment]


def _reads_tensor(rules: _Rules, call: ast.Call, skip: int = 0) -> bool:
    """Whether a call's arguments after the first `skip` positional ones (keywords included) may be tensors."""
    values = [*call.args[skip:], *(k.value for k in call.keywords)]
    return any(rules.scope.may_hold_tensor(v) for v in values)


def _local_container(scope: Scope, target: ast.Subscript) -> bool:
    """`box[0] = x` into a local list/dict display: a store into a container, no tensor write."""
    return isinstance(target.value, ast.Name) and target.value.id in scope.containers
