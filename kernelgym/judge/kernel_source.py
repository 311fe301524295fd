"""The answer's `@triton.jit` functions as data: captured in the recording child, checked and rebuilt
in the replay process.

Triton's front end runs Python while it compiles a kernel: a call to any Python callable the kernel
can name is made at compile time, an attribute of a global is looked up with `getattr`, default values
and annotations run when the `def` runs; Triton's CPU interpreter runs the body as Python. So the replay
process, which must never run answer Python, compiles only kernels whose source passes
`kernel_problems`: every name a kernel uses is a parameter, a local, another captured kernel, a
constant, or public Triton language; every attribute chain that starts at a module (`tl.math.exp`) or
an imported Triton object is resolved step by step and may only pass through Triton language modules
and end at a Triton language object (`_path_allowed`: a builtin, a Triton JIT function, a dtype, a
Triton class, a `math` function); a kernel function, a builtin or a module is never the base of any
other attribute; any other value (a tensor, dtype, constexpr, constant) has only the attributes of
Triton's values (`_value_attributes`), which lead from such objects only to such objects. No private or
dunder attribute, no nested function or class, lambda, import, try or with.

`capture` runs in the untrusted child and may be lied to: nothing it reports is trusted, only
checked here. A lie changes which program is replayed, and the verdict is about that program.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import keyword
import math
import re
import textwrap
import weakref
from dataclasses import dataclass, field
from typing import Any

# Modules a kernel may name, by their `__name__` (aliases are free: `tl`, `libdevice`, `tlmath`).
ALLOWED_MODULES = ("triton", "triton.language", "math")
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
# Attributes of the `triton` package a kernel body may use besides `triton.language`.
TRITON_TOP_LEVEL = {"language", "cdiv", "next_power_of_2"}
# On a GPU the compiler swaps the generic libdevice module (stubs) for its backend's, at a global and at
# every attribute of a module (each backend's `get_module_map`): a path is checked in each of these views.
BACKEND_MODULE_MAPS = ({}, {"triton.language.extra.libdevice": "triton.language.extra.cuda.libdevice"},
                       {"triton.language.extra.libdevice": "triton.language.extra.hip.libdevice"})
# Builtins Triton's code generator implements (plus a few it folds on constants).
ALLOWED_BUILTINS = {"range", "len", "min", "max", "float", "int", "bool", "isinstance", "print", "tuple",
                    "abs", "list", "zip", "enumerate", "True", "False", "None", "getattr", "hasattr"}
_DISALLOWED_NODES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                     ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Try, ast.With, ast.AsyncWith, ast.Yield,
                     ast.YieldFrom, ast.Await, ast.Delete, ast.NamedExpr, ast.Break, ast.Continue, ast.Match)
# Attributes of values inside a kernel (tensors, dtypes, constexprs, tuples) besides Triton's public
# methods: `x.dtype.element_ty`, `BLOCK.value`. Not `.handle` (the interpreter's numpy array, whose
# methods reach the file system), not a mapping's methods, nor anything private. Whatever a kernel can
# hold, these lead only to what a kernel can hold (tests/judge/test_kernel_source_paths.py walks them).
_VALUE_ATTRIBUTES = {"shape", "numel", "element_ty", "primitive_bitwidth", "int_bitwidth", "fp_mantissa_width",
                     "exponent_bias", "name", "type", "value", "scalar", "dtype", "T", "int_signedness",
                     "itemsize", "block_shape", "strides", "base", "layout", "nbytes"}
_NOT_VALUE_ATTRIBUTES = {"handle", "to_ir", "codegen_name", "mangle", "cache_key_part", "from_ir",
                         "values", "items", "keys", "get", "fn", "src", "get_capture_scope", "module"}
_TYPE_BUILTINS = {"int", "float", "bool", "str"}  # plain annotations (`axis: int`)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
JIT_OPTIONS = ("do_not_specialize", "do_not_specialize_on_alignment", "noinline")


class CaptureError(ValueError):
    """A kernel the replay cannot express: says which global of which kernel, and what is allowed."""


@dataclass
class KernelSpec:
    """One `@triton.jit` function: its source (from `def`, decorators stripped) and the globals it reads."""

    name: str
    src: str
    modules: dict[str, str] = field(default_factory=dict)  # alias -> module __name__
    constants: dict[str, Any] = field(default_factory=dict)  # name -> number/bool/str/None or {"tl_dtype": ...}
    constexpr_constants: list[str] = field(default_factory=list)  # which constants were tl.constexpr globals
    helpers: list[str] = field(default_factory=list)  # names of other captured kernels it calls
    imports: dict[str, str] = field(default_factory=dict)  # name -> "module:attr" of a Triton language object
    jit_options: dict[str, Any] = field(default_factory=dict)
    # A plain function wrapped in `tl.constexpr` (FlagGems' `@tl.constexpr def get_scan_accum_type(dtype)`):
    # the front end calls it at compile time with constexpr values (dtypes, numbers). It is checked like a
    # kernel body and rebuilt under `@triton.language.constexpr`, never launched.
    constexpr_function: bool = False
    # The Python functions captured under this name (child side only, never on the wire): a second function
    # of the same name and source is compared value by value once (`_capture_function`). Weak: a factory's
    # freed kernel must not pass for a new one that reuses its id.
    functions: Any = field(default_factory=weakref.WeakSet, compare=False, repr=False)

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "src": self.src, "modules": dict(self.modules), "constants": dict(self.constants),
                "constexpr_constants": list(self.constexpr_constants), "helpers": list(self.helpers),
                "imports": dict(self.imports), "jit_options": dict(self.jit_options),
                "constexpr_function": self.constexpr_function}

    @classmethod
    def from_wire(cls, d: Any) -> "KernelSpec":
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("src"), str):
            raise ValueError("malformed kernel spec")
        return cls(name=d["name"], src=d["src"], modules=dict(d.get("modules") or {}),
                   constants=dict(d.get("constants") or {}), constexpr_constants=list(d.get("constexpr_constants") or []),
                   helpers=list(d.get("helpers") or []), imports=dict(d.get("imports") or {}),
                   jit_options=dict(d.get("jit_options") or {}), constexpr_function=d.get("constexpr_function") is True)


# ---------------------------------------------------------------- capture (untrusted child side)
def function_source(fn: Any) -> str:
    """The `def` of a Python function, dedented, decorators dropped (as Triton's JIT keeps it)."""
    src = textwrap.dedent(inspect.getsource(fn))
    match = re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE)
    if match is None:
        raise CaptureError(f"kernel {fn.__name__}: its source has no plain `def`")
    return src[match.start():]


def capture(kernel: Any, into: dict[str, KernelSpec]) -> str:
    """Add `kernel` (a JITFunction or InterpretedFunction) and the kernels it calls to `into`; its name."""
    fn = getattr(kernel, "fn", None)
    if fn is None or not inspect.isfunction(fn):
        raise CaptureError(f"{kernel!r} is not a @triton.jit function")
    return _capture_function(fn, into, _jit_options(kernel), constexpr_function=False)


def _capture_function(fn: Any, into: dict[str, KernelSpec], jit_options: dict[str, Any], constexpr_function: bool) -> str:
    name = fn.__name__
    src = function_source(fn)
    existing = into.get(name)
    if existing is not None:
        if existing.src != src or existing.constexpr_function != constexpr_function:
            raise CaptureError(f"two different kernels are named {name}: give each @triton.jit function its own name")
        if fn not in existing.functions:
            # A kernel factory called twice: one source, other closure or global values. The replay rebuilds
            # kernels by name, so the second would silently run as the first (red-team s12 and s12b).
            probe = KernelSpec(name=name, src=src, jit_options=jit_options, constexpr_function=constexpr_function)
            _capture_scope(fn, probe, dict(into))
            if _captured(probe) != _captured(existing):
                raise CaptureError(f"two different kernels are named {name}: the same source with other closure "
                                   "or global values (a kernel factory called twice); give each kernel its own name, or pass "
                                   "the values as tl.constexpr arguments")
            existing.functions.add(fn)
        return name
    spec = KernelSpec(name=name, src=src, jit_options=jit_options, constexpr_function=constexpr_function)
    spec.functions.add(fn)
    into[name] = spec
    _capture_scope(fn, spec, into)
    return name


def _capture_scope(fn: Any, spec: KernelSpec, into: dict[str, KernelSpec]) -> None:
    scope = dict(fn.__globals__)
    if fn.__closure__:
        scope |= {n: c.cell_contents for n, c in zip(fn.__code__.co_freevars, fn.__closure__)}
    for ref in sorted(free_names(spec.src)):
        if ref not in scope:
            continue  # a builtin (checked on the trusted side) or an undefined name (Triton will say)
        _capture_global(spec, ref, scope[ref], into)


def _captured(spec: KernelSpec) -> tuple:
    return (spec.modules, spec.constants, spec.constexpr_constants, spec.helpers, spec.imports)


def _jit_options(kernel: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in JIT_OPTIONS:
        value = getattr(kernel, key, None)
        if value:
            out[key] = list(value) if isinstance(value, (list, tuple)) else value
    return out


def _capture_global(spec: KernelSpec, ref: str, value: Any, into: dict[str, KernelSpec]) -> None:
    import types

    from triton.language import core as tlcore

    if isinstance(value, types.ModuleType):
        spec.modules[ref] = value.__name__
    elif hasattr(value, "fn") and inspect.isfunction(getattr(value, "fn", None)) and hasattr(value, "run"):
        spec.helpers.append(capture(value, into))
    elif _triton_object(value):
        spec.imports[ref] = f"{value.__module__}:{value.__name__}"
    elif isinstance(value, tlcore.constexpr) and inspect.isfunction(value.value):
        spec.helpers.append(_capture_function(value.value, into, {}, constexpr_function=True))
    elif isinstance(value, tlcore.constexpr):
        spec.constants[ref] = encode_constant(value.value, f"kernel {spec.name}: global {ref}")
        spec.constexpr_constants.append(ref)
    else:
        spec.constants[ref] = encode_constant(value, f"kernel {spec.name}: global {ref}")


def _triton_object(value: Any) -> bool:
    """A function or class of Triton's language imported by name (`from triton.language import constexpr`)."""
    module = getattr(value, "__module__", None)
    return ((inspect.isclass(value) or callable(value)) and isinstance(module, str) and _module_allowed(module)
            and module != "math" and isinstance(getattr(value, "__name__", None), str))


def encode_constant(value: Any, where: str) -> Any:
    """A compile-time constant as plain data: numbers, bools, strings, None, Triton dtypes, tuples."""
    from triton.language import core as tlcore

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, tlcore.dtype):
        return {"tl_dtype": str(value)}
    if isinstance(value, tuple):
        return {"tuple": [encode_constant(v, where) for v in value]}
    raise CaptureError(f"{where} is a {type(value).__name__}; a kernel may use only Triton modules, other "
                       "@triton.jit functions and constants (numbers, bools, strings, Triton dtypes, tl.constexpr)")


def free_names(src: str) -> set[str]:
    """Names a function reads that it neither binds nor takes as a parameter: its globals."""
    tree = ast.parse(src)
    fdef = tree.body[0]
    bound = {a.arg for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs)}
    for extra in (fdef.args.vararg, fdef.args.kwarg):
        if extra is not None:
            bound.add(extra.arg)
    loaded: set[str] = set()
    for node in ast.walk(fdef):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
    # Annotations and defaults are read by Python when the `def` runs: globals too.
    return loaded - bound | _annotation_names(fdef)


def _annotation_names(fdef: ast.FunctionDef) -> set[str]:
    names = set()
    for a in (*fdef.args.posonlyargs, *fdef.args.args, *fdef.args.kwonlyargs):
        if a.annotation is not None:
            names |= {n.id for n in ast.walk(a.annotation) if isinstance(n, ast.Name)}
    return names


# ---------------------------------------------------------------- checks (trusted side)
def answer_sources(code: str) -> dict[str, list[str]]:
    """Every function the answer's text defines, by name: its source from the `def` line on,
    dedented, decorators dropped. The replay compiles these, never the source the answer's process
    reported: what runs is exactly what the capability scan read (a decorator or `inspect` trick
    in the answer's process changes nothing here)."""
    lines = code.splitlines(keepends=True)
    out: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.FunctionDef) and node.end_lineno is not None:
            src = textwrap.dedent("".join(lines[node.lineno - 1:node.end_lineno]))
            out.setdefault(node.name, [])
            if src not in out[node.name]:
                out[node.name].append(src)
    return out


def use_answer_sources(specs: dict[str, KernelSpec], code: str) -> list[str]:
    """Replace each spec's reported source with the answer text's; problems when a kernel is not
    (or more than once differently) defined there."""
    sources = answer_sources(code)
    problems = []
    for spec in specs.values():
        found = sources.get(spec.name, [])
        if len(found) != 1:
            problems.append(f"kernel {spec.name} is defined {'more than once' if found else 'nowhere'} in the "
                            "answer's text; give each @triton.jit function one definition of its own name")
        else:
            spec.src = found[0]
    return problems


def kernel_problems(specs: dict[str, KernelSpec]) -> list[str]:
    """Why these kernel specs cannot be compiled without running answer Python (empty: they can)."""
    problems: list[str] = []
    bindings: dict[str, Any] = {}
    for spec in specs.values():
        if not _IDENT.match(spec.name) or keyword.iskeyword(spec.name):
            problems.append(f"kernel name {spec.name!r} is not an identifier")
            continue
        if spec.constexpr_function is not False and (spec.constexpr_function is not True or spec.jit_options):
            problems.append(f"function {spec.name}: a tl.constexpr function takes no @triton.jit options")
        for key, value in spec.jit_options.items():
            if key not in JIT_OPTIONS or not _jit_option_ok(value):
                problems.append(f"kernel {spec.name}: @triton.jit option {key!r} is not plain data")
        for alias, module in spec.modules.items():
            if not _IDENT.match(alias) or not _module_allowed(module):
                problems.append(f"kernel {spec.name}: uses module {module} as {alias}; kernels may use only Triton "
                                "language modules (triton, triton.language and its submodules) and math")
        for helper in spec.helpers:
            if helper not in specs:
                problems.append(f"kernel {spec.name}: calls {helper}, which was not captured")
        for name, target in spec.imports.items():
            if not _import_ok(name, target):
                problems.append(f"kernel {spec.name}: {name} is not an object of Triton's language")
        kinds = (("module", spec.modules.items()), ("constant", spec.constants.items()),
                 ("import", spec.imports.items()), ("kernel", ((h, h) for h in spec.helpers)))
        for kind, items in kinds:  # one binding per name: a module is never read as a constant, or back
            for name, value in items:
                if name in bindings and bindings[name] != (kind, value):
                    problems.append(f"the kernels bind the global name {name} to different values; rename one")
                bindings.setdefault(name, (kind, value))
        for name, value in spec.constants.items():
            if not _IDENT.match(name) or not _constant_ok(value):
                problems.append(f"kernel {spec.name}: global {name} is not a plain constant")
        problems += [f"kernel {spec.name}: {p}" for p in _source_problems(spec, specs)]
    return problems


# Builtins that answer what an object is, not what value it holds. In a kernel the GPU code generator folds them
# at compile time over its objects and the interpreter evaluates them at run time over its own (red-team round s28).
INTROSPECTION_BUILTINS = frozenset({"hasattr", "getattr", "isinstance", "callable", "type"})
# Attributes of a value whose class `isinstance` may test (`isinstance(x.dtype, tl.pointer_type)`).
_TYPED_ATTRIBUTES = frozenset({"dtype", "type", "element_ty", "value"})


def branch_oracle(obj: Any) -> bool:
    """Whether `obj`, a Triton object a kernel names, may be another object under the CPU interpreter than in the
    GPU code generator: a function, class or module (the interpreter patches `triton.language`: `tl.range is
    tl.static_range`, `hasattr(tl.multiple_of, "func")`). Constants, dtypes, constexprs of them and option
    enums are the same objects in both."""
    import enum

    from triton.language import core

    if obj is None or isinstance(obj, (bool, int, float, str, core.dtype, enum.Enum)) or _language_enum(obj):
        return False
    if isinstance(obj, core.constexpr):
        return branch_oracle(obj.value)
    if isinstance(obj, tuple):
        return any(branch_oracle(v) for v in obj)
    return True


def oracle_use(node: ast.AST, parents: dict[ast.AST, ast.AST], triton_call: Any) -> bool:
    """Whether a Triton function, class or module named by `node` is used as a value whose identity or attributes
    a kernel can test: anything but called, an annotation, the class `isinstance` tests against, or an argument
    of a Triton function (`triton_call(func)`: `tl.reduce(x, 0, combine)`). Compared (`is`, `==`), given to
    `hasattr`/`getattr`/`callable`/`type`, bound to a name or passed to a helper, the code generator and the
    interpreter can see two different objects, and the check compiles a branch that never runs."""
    parent = parents.get(node)
    if isinstance(parent, ast.Call) and parent.func is node:
        return False
    if isinstance(parent, ast.arg) or (isinstance(parent, (ast.AnnAssign, ast.FunctionDef)) and (
            getattr(parent, "annotation", None) is node or getattr(parent, "returns", None) is node)):
        return False
    if isinstance(parent, ast.Tuple):
        node, parent = parent, parents.get(parent)
    call = parents.get(parent) if isinstance(parent, ast.keyword) else parent
    if not isinstance(call, ast.Call):
        return True
    if isinstance(call.func, ast.Name) and call.func.id == "isinstance" and len(call.args) == 2:
        return call.args[1] is not node
    return not (node in call.args or isinstance(parent, ast.keyword)) or not triton_call(call.func)


def introspected_attribute(call: ast.AST) -> bool:
    """`hasattr(x.attr, ...)`, `type(x.attr)`...: an introspection builtin over an attribute of a kernel value (the
    interpreter's objects are not the code generator's: `hasattr(x_ptr.handle, "data")`). `isinstance` of a
    value's dtype or type stays allowed."""
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id in INTROSPECTION_BUILTINS and call.args and isinstance(call.args[0], ast.Attribute)):
        return False
    return not (call.func.id == "isinstance" and call.args[0].attr in _TYPED_ATTRIBUTES)


def _oracle_problems(node: ast.AST, parents: dict[ast.AST, ast.AST], spec: KernelSpec, bound: set[str]) -> list[str]:
    """A Triton function, class or module used as a testable value (`oracle_use`), or an introspected attribute."""
    if introspected_attribute(node) and _root(node.args[0]) in bound:
        return [f"line {node.lineno}: {node.func.id}() of an attribute ({ast.unparse(node.args[0])[:40]}); the GPU "
                "compiler and the CPU interpreter hold different objects there"]
    if not isinstance(node, (ast.Name, ast.Attribute)) and not _literal_attribute_call(node):
        return []
    parent = parents.get(node)
    if (isinstance(parent, ast.Attribute) and parent.value is node) or (
            _literal_attribute_call(parent) and parent.func.id == "getattr" and parent.args[0] is node):
        return []  # a step of a longer path: judged at its end
    root, parts = _chain(node)
    if not isinstance(root, ast.Name) or root.id in bound:
        return []
    if root.id in spec.helpers:
        obj: Any = _MISSING  # a kernel function: an InterpretedFunction here, a JITFunction in the code generator
    elif root.id in spec.modules or root.id in spec.imports:
        path = [spec.modules[root.id]] if root.id in spec.modules else str(spec.imports[root.id]).split(":")
        obj = _resolve(path + parts)
    else:
        return []
    if (obj is _MISSING or branch_oracle(obj)) and oracle_use(node, parents, lambda f: _triton_call(f, spec, bound)):
        return [f"line {node.lineno}: {ast.unparse(node)[:60]} used as a value (compared, tested with hasattr/"
                "isinstance, bound to a name or passed to a helper); the GPU compiler and the CPU interpreter hold "
                "different objects there. Call Triton functions; test only constexpr values and dtypes"]
    return []


def branch_problems(kernel: Any) -> list[str]:
    """`kernel_problems`' refusals of tested Triton objects and interpreter objects, judged in the answer's own
    process from the live globals of `kernel` (a JIT or interpreted function) and of the kernels it calls: the
    front-end check runs it at a kernel's first launch, so a kernel that is never replayed (one launched in
    `__init__`) cannot run a branch the check never compiled (red-team round s28)."""
    problems: list[str] = []
    seen: set[int] = set()
    todo = [kernel]
    while todo:
        k = todo.pop()
        fn = getattr(k, "fn", None)
        if not inspect.isfunction(fn) or id(fn) in seen or len(seen) > 256:
            continue
        seen.add(id(fn))
        try:
            fdef = ast.parse(function_source(fn)).body[0]
            full = inspect.getsource(fn)
            decorators = full[:re.search(r"^\s*def\s", full, re.MULTILINE).start()].count("\n")
            ast.increment_lineno(fdef, fn.__code__.co_firstlineno - 1 + decorators)  # lines of the answer's file
        except (OSError, TypeError, SyntaxError, CaptureError, IndexError, AttributeError):
            continue  # no source: Triton's own launch fails on it the same way
        scope = dict(fn.__globals__)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                scope.pop(name, None)  # an empty cell: Triton's capture scope refuses it
        bound = _bound_names(fdef)
        parents = {child: node for node in ast.walk(fdef) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(fdef):
            if node is fdef:
                continue
            problems += [f"kernel {fn.__name__}: {p}" for p in _live_problems(node, parents, scope, bound)]
            if isinstance(node, ast.Name) and node.id not in bound and _jit_callable(scope.get(node.id)):
                todo.append(scope[node.id])
    return problems


def _live_problems(node: ast.AST, parents: dict[ast.AST, ast.AST], scope: dict[str, Any], bound: set[str]) -> list[str]:
    """`_oracle_problems` and the interpreter-object attributes, over live globals instead of a captured spec."""
    attr = node.attr if isinstance(node, ast.Attribute) else (
        node.args[1].value if _literal_attribute_call(node) else None)
    if attr in _NOT_VALUE_ATTRIBUTES or (isinstance(attr, str) and attr.startswith("__")):
        return [f"line {node.lineno}: .{attr} inside a kernel reads the CPU interpreter's objects, which a GPU "
                "kernel does not have"]
    if introspected_attribute(node) and _root(node.args[0]) in bound:
        return [f"line {node.lineno}: {node.func.id}() of an attribute ({ast.unparse(node.args[0])[:40]}); the GPU "
                "compiler and the CPU interpreter hold different objects there"]
    if not isinstance(node, (ast.Name, ast.Attribute)) and not _literal_attribute_call(node):
        return []
    parent = parents.get(node)
    if (isinstance(parent, ast.Attribute) and parent.value is node) or (
            _literal_attribute_call(parent) and parent.func.id == "getattr" and parent.args[0] is node):
        return []
    obj = _live_object(node, scope, bound)
    if obj is _MISSING or not (_jit_callable(obj) or (_triton_made(obj) and branch_oracle(obj))):
        return []
    if oracle_use(node, parents, lambda f: _live_triton_function(_live_object(f, scope, bound))):
        return [f"line {node.lineno}: {ast.unparse(node)[:60]} used as a value (compared, tested with hasattr/"
                "isinstance, bound to a name or passed to a helper); the GPU compiler and the CPU interpreter hold "
                "different objects there. Call Triton functions; test only constexpr values and dtypes"]
    return []


def _live_object(node: ast.AST, scope: dict[str, Any], bound: set[str]) -> Any:
    """What a path rooted at a global names, read without running answer code (modules by `getattr`, anything
    else statically); `_MISSING` for a local, a builtin or what cannot be read."""
    root, parts = _chain(node)
    if not isinstance(root, ast.Name) or root.id in bound or root.id not in scope:
        return _MISSING
    obj = scope[root.id]
    for part in parts:
        try:
            obj = getattr(obj, part) if inspect.ismodule(obj) else inspect.getattr_static(obj, part)
        except AttributeError:
            return _MISSING
    return obj


def _triton_made(obj: Any) -> bool:
    """A Triton object, or a constexpr/tuple holding one: `tl.constexpr(tl.range)` made at module level."""
    from triton.language import core

    if isinstance(obj, core.constexpr):
        return _triton_made(obj.value)
    if isinstance(obj, tuple):
        return any(_triton_made(v) for v in obj)
    if inspect.ismodule(obj):
        return obj.__name__.split(".")[0] == "triton"
    module = getattr(obj, "__module__", None) if (inspect.isclass(obj) or callable(obj)) else None
    return isinstance(module, str) and (module.split(".")[0] == "triton" or module == "functools")


def _live_triton_function(obj: Any) -> bool:
    return obj is not _MISSING and _triton_made(obj) and not inspect.isclass(obj) and not isinstance(obj, tuple)


def _triton_call(func: ast.AST, spec: KernelSpec, bound: set[str]) -> bool:
    """A call of a Triton function (not of a class such as `tl.constexpr`, whose instance carries its argument on)."""
    root, parts = _chain(func)
    if not isinstance(root, ast.Name) or root.id in bound or not (root.id in spec.modules or root.id in spec.imports):
        return False
    path = [spec.modules[root.id]] if root.id in spec.modules else str(spec.imports[root.id]).split(":")
    obj = _resolve(path + parts)
    return obj is not _MISSING and not inspect.isclass(obj)


def _resolve(path: list[str]) -> Any:
    """The object a dotted path from a module names (`["triton.language", "range"]`), or `_MISSING`."""
    import importlib

    try:
        obj: Any = importlib.import_module(path[0])
    except ImportError:
        return _MISSING
    for part in path[1:]:
        if part.startswith("_"):
            return _MISSING
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def _jit_option_ok(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    return isinstance(value, list) and len(value) < 256 and all(
        (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, str) and _IDENT.match(v)) for v in value)


def _import_ok(name: str, target: Any) -> bool:
    if not isinstance(target, str) or target.count(":") != 1 or not _IDENT.match(name):
        return False
    module, attr = target.split(":")
    return _module_allowed(module) and module != "math" and _IDENT.match(attr) is not None \
        and not attr.startswith("_") and _path_allowed([module, attr], as_value=True)


_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


def _module_allowed(name: str) -> bool:
    if not isinstance(name, str) or not _DOTTED.match(name) or not (
            name in ALLOWED_MODULES or name.startswith(ALLOWED_MODULE_PREFIXES)):
        return False
    import importlib

    try:
        return importlib.import_module(name).__name__ == name
    except ImportError:
        return False


def _constant_ok(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return not isinstance(value, str) or len(value) < 256
    if isinstance(value, dict) and set(value) == {"tl_dtype"}:
        return _tl_dtype(value["tl_dtype"]) is not None
    if isinstance(value, dict) and set(value) == {"float"}:
        return value["float"] in ("inf", "-inf", "nan")
    if isinstance(value, dict) and set(value) == {"tuple"} and isinstance(value["tuple"], list):
        return all(_constant_ok(v) for v in value["tuple"])
    return False


def _tl_dtype(name: Any) -> Any:
    import triton.language as tl

    if not isinstance(name, str) or not _IDENT.match(name) or name.startswith("_"):
        return None
    value = getattr(tl, name, None)
    return value if isinstance(value, tl.dtype) else None


def _source_problems(spec: KernelSpec, specs: dict[str, KernelSpec]) -> list[str]:
    try:
        tree = ast.parse(spec.src)
    except SyntaxError as e:
        return [f"source does not parse: {e.msg}"]
    if len(tree.body) != 1 or not isinstance(tree.body[0], ast.FunctionDef) or tree.body[0].name != spec.name:
        return ["the source must be exactly one `def` of the kernel"]
    fdef = tree.body[0]
    if fdef.decorator_list:
        return ["decorators belong to the launch, not the kernel source"]
    problems = _def_line_problems(spec.src)
    args = fdef.args
    if args.vararg or args.kwarg:
        problems.append("*args/**kwargs parameters")
    for default in (*args.defaults, *args.kw_defaults):
        if default is not None and not _literal(default):
            problems.append(f"line {default.lineno}: a parameter default that is not a literal")
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        if a.annotation is not None and not _annotation_ok(a.annotation, spec):
            problems.append(f"line {a.lineno}: annotation of {a.arg} must be a Triton type such as tl.constexpr")
    if fdef.returns is not None and not _annotation_ok(fdef.returns, spec):  # evaluated when the def runs
        problems.append(f"line {fdef.lineno}: the return annotation must be a Triton type such as tl.tensor")
    known = set(spec.modules) | set(spec.constants) | set(spec.helpers) | set(spec.imports)
    for name in sorted(free_names(spec.src) - known - ALLOWED_BUILTINS - _TYPE_BUILTINS):
        problems.append(f"{name} is not defined for the kernel (not a parameter, local, captured global or "
                        "Triton builtin)")
    bound = _bound_names(fdef)
    for name in sorted(bound & (set(spec.modules) | set(spec.imports) | set(spec.helpers))):
        problems.append(f"{name} names a module or function of the kernel's globals and is assigned inside it")
    parents = {child: node for node in ast.walk(fdef) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(fdef):
        if node is not fdef:
            problems += _node_problems(node, parents, spec, known, bound)
            problems += _oracle_problems(node, parents, spec, bound)
    return problems


def _node_problems(node: ast.AST, parents: dict[ast.AST, ast.AST], spec: KernelSpec, known: set[str],
                   bound: set[str]) -> list[str]:
    """What one node of a kernel body does that is not Triton language."""
    problems: list[str] = []
    if isinstance(node, _DISALLOWED_NODES):
        problems.append(f"line {node.lineno}: {type(node).__name__.lower()} inside a kernel")
    elif isinstance(node, (ast.Attribute, ast.Subscript)) and not isinstance(node.ctx, ast.Load):
        if isinstance(node, ast.Attribute) or _root(node) not in bound:
            problems.append(f"line {node.lineno}: assignment to an attribute or to an item of a global")
        if isinstance(node, ast.Attribute):
            problems += _attribute_problems(node.value, node.attr, node.lineno, spec, bound, as_value=True)
    elif isinstance(node, ast.Attribute):
        problems += _attribute_problems(node.value, node.attr, node.lineno, spec, bound,
                                        as_value=not _chain_base(node, parents))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
        if not _literal_attribute_call(node):
            problems.append(f"line {node.lineno}: {node.func.id} needs a literal public attribute name")
        else:  # judged exactly like the attribute it names
            as_value = node.func.id == "getattr" and not _chain_base(node, parents)
            problems += _attribute_problems(node.args[0], node.args[1].value, node.lineno, spec, bound, as_value)
    elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        # A name the kernel assigns is its local everywhere in it (Python's scoping): never the builtin.
        if node.id.startswith("__") or (node.id not in known | bound and node.id in vars(builtins)
                                         and node.id not in ALLOWED_BUILTINS):
            problems.append(f"line {node.lineno}: {node.id} is not available in a kernel")
        elif node.id in ("getattr", "hasattr") and node.id not in known | bound and not (
                isinstance(parents.get(node), ast.Call) and parents[node].func is node):
            problems.append(f"line {node.lineno}: {node.id} only called, with a literal name "
                            "(as a value it would be called with a computed one)")
        elif node.id in spec.modules and node.id not in bound and not _chain_base(node, parents):
            problems.append(f"line {node.lineno}: the module {node.id} used as a value; a kernel may name "
                            f"what is in it ({node.id}.name), not pass or keep the module")
    elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("__"):
        problems.append(f"line {node.lineno}: dunder string")
    return problems


# Triton finds a kernel's `def` by scanning its lines, not by parsing them: the JIT compiler takes the
# source from the first line matching this (after the decorators), the interpreter from the last line
# that starts with `def `.
_JIT_DEF_LINE = re.compile(r"def\s+\w+\s*\(")


def _def_line_problems(src: str) -> list[str]:
    """Both scans must find the kernel's own `def`: its first line, and no other line (a line of a
    string or docstring) starting with `def `. Lines are split as `linecache` splits the rebuilt module."""
    lines = src.splitlines()
    problems = []
    if not lines or not (lines[0].startswith("def ") and _JIT_DEF_LINE.match(lines[0])):
        problems.append("the kernel's first line must read `def <name>(` (Triton finds the kernel by that line)")
    if any(line.strip().startswith("def ") for line in lines[1:]):
        problems.append("a second line starting with `def ` (in a string?): Triton's interpreter would take "
                        "the kernel's source from there")
    return problems


def _bound_names(fdef: ast.FunctionDef) -> set[str]:
    """Names the kernel binds (parameters, assignment and loop targets): its locals."""
    args = fdef.args
    bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    return bound | {n.id for n in ast.walk(fdef) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _literal_attribute_call(node: Any) -> bool:
    """`getattr(x, "name", ...)` / `hasattr(x, "name")` with a literal identifier."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr")
            and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str) and _IDENT.match(node.args[1].value) is not None)


def _chain(node: ast.AST) -> tuple[ast.AST, list[str]]:
    """`tl.math.exp` -> (Name tl, ["math", "exp"]); `getattr(x, "name")` reads as `x.name`."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif _literal_attribute_call(node) and node.func.id == "getattr":
            parts.append(node.args[1].value)
            node = node.args[0]
        else:
            return node, parts[::-1]


def _root(node: ast.AST) -> str | None:
    """The name an attribute/item chain starts at (`a.b[0].c` -> "a"), or None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _chain_base(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether `node` is only the base of a further attribute (`tl` in `tl.load`), not a value."""
    parent = parents.get(node)
    return (isinstance(parent, ast.Attribute) and parent.value is node) or (
        _literal_attribute_call(parent) and parent.args[0] is node)


def _attribute_problems(base: ast.AST, attr: str, line: int, spec: KernelSpec, bound: set[str],
                        as_value: bool) -> list[str]:
    """`base.attr`: a path from a module or an imported Triton object, resolved at every step, or an
    attribute of a value; never an attribute of a kernel function or a builtin."""
    if attr.startswith("_"):
        return [f"line {line}: private attribute .{attr}"]
    root, parts = _chain(base)
    parts.append(attr)
    name = root.id if isinstance(root, ast.Name) and root.id not in bound else None
    if name is not None and (name in spec.modules or name in spec.imports):
        path = [spec.modules[name]] if name in spec.modules else str(spec.imports[name]).split(":")
        dotted = ".".join([*path, *parts])
        if _path_allowed([*path, *parts], as_value=as_value):
            return []
        if as_value and _path_allowed([*path, *parts], as_value=False):
            return [f"line {line}: the module {dotted} used as a value; a kernel may name what is in it, "
                    "not pass or keep the module"]
        return [f"line {line}: {dotted} is not Triton language"]
    if name is not None and name in spec.helpers:
        return [f"line {line}: .{attr} of the kernel function {name}; a kernel may only call it"]
    if name is not None and name not in spec.constants and name in ALLOWED_BUILTINS | _TYPE_BUILTINS:
        return [f"line {line}: .{attr} of the builtin {name}"]
    if attr not in _value_attributes():
        return [f"line {line}: .{attr} is not an attribute of a Triton value"]
    return []


def _value_attributes() -> set[str]:
    from triton.language import core

    names = set(_VALUE_ATTRIBUTES)
    for cls in (core.tensor, core.dtype, core.pointer_type, core.block_type, core.constexpr, core.tuple,
                core.tensor_descriptor_base, core.tensor_descriptor):  # `desc.load(...)`
        names |= {n for n in dir(cls) if not n.startswith("_")}
    return names - _NOT_VALUE_ATTRIBUTES


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and _literal(node.operand)


def _annotation_ok(node: ast.AST, spec: KernelSpec) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return bool(re.fullmatch(r"[A-Za-z_][\w.]*", node.value)) and "__" not in node.value
    if isinstance(node, ast.Attribute):
        root, parts = _chain(node)
        if not isinstance(root, ast.Name) or root.id not in spec.modules:
            return False
        return _path_allowed([spec.modules[root.id], *parts], as_value=True)
    if isinstance(node, ast.Name):
        return node.id in spec.imports or node.id in _TYPE_BUILTINS
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    return False


_MISSING = object()


def _path_allowed(path: list[str], as_value: bool) -> bool:
    """Whether a dotted path from a module (`["triton.language", "math", "exp"]`) is Triton language at
    every step, as the CPU and each GPU backend resolve it: Triton language modules, then a language
    object (`_language_object`), then at most the attributes of a dtype, `.value` of a constexpr or a
    member of an enum. A module ends a path only as the base of a further attribute (`as_value` false)."""
    return all(_resolves_to_language(path, view, as_value) for view in BACKEND_MODULE_MAPS)


def _resolves_to_language(path: list[str], view: dict[str, str], as_value: bool) -> bool:
    import importlib

    import triton

    root, parts = path[0], list(path[1:])
    if any(not isinstance(p, str) or not _IDENT.match(p) or p.startswith("_") for p in parts):
        return False
    if root == "triton":
        if not parts or parts[0] not in TRITON_TOP_LEVEL:
            return False
        if parts[0] != "language":
            obj = getattr(triton, parts[0], None)
            return len(parts) == 1 and (obj is triton.cdiv or obj is triton.next_power_of_2)
        root, parts = "triton.language", parts[1:]
    if not _module_allowed(root):
        return False
    _import_language_modules()
    obj: Any = importlib.import_module(root)
    for i, part in enumerate(parts):
        if inspect.ismodule(obj):
            obj = _backend_module(obj, view)
            if not _module_allowed(obj.__name__):
                return False
            obj = getattr(obj, part, _MISSING)
            if obj is _MISSING:
                return i == len(parts) - 1  # a name the module lacks: Triton says so
        else:
            obj = _language_step(obj, part)
            if obj is _MISSING:
                return False
    if inspect.ismodule(obj):
        return not as_value and _module_allowed(_backend_module(obj, view).__name__)
    return _language_object(obj)


def _language_step(obj: Any, part: str) -> Any:
    """The one kind of attribute a path may take past a module: a dtype's (`tl.float32.primitive_bitwidth`),
    a constexpr's `.value`, an enum's member (`tl.PropagateNan.ALL`). `_MISSING` for anything else."""
    from triton.language import core

    if isinstance(obj, core.dtype) and part in _value_attributes():
        return getattr(obj, part, _MISSING)
    if isinstance(obj, core.constexpr) and part == "value":
        return obj.value
    if _language_enum(obj):
        member = getattr(obj, part, _MISSING)
        return member if isinstance(member, obj) else _MISSING
    return _MISSING


def _language_object(obj: Any) -> bool:
    """What a path may end at: a constant, a dtype, a Triton builtin or JIT function, a class of Triton
    values or types, an option enum, a generic libdevice stub, a `math` function, or a dtype's method.
    Never a module's helper that is not language (`tl.core.builtin`, `tl.extra.module_from_spec`), a
    mapping, a list, or an attribute of a function."""
    import enum

    from triton.language import core

    if obj is None or isinstance(obj, (bool, int, float, str, core.dtype)):
        return True
    if isinstance(obj, tuple):
        return len(obj) < 256 and all(_language_object(v) for v in obj)
    if isinstance(obj, core.constexpr):
        return _language_object(obj.value)
    if _language_enum(obj) or (isinstance(obj, enum.Enum) and _language_enum(type(obj))):
        return True
    if inspect.isclass(obj):
        return (_from_language(obj) and issubclass(obj, (core.base_value, core.base_type))) or any(
            obj is getattr(core, name, None) for name in ("slice", "const"))
    if _jit_callable(obj):
        import triton

        return _from_language(obj.fn) or obj is triton.cdiv or obj is triton.next_power_of_2
    if inspect.isfunction(obj):
        return _from_language(obj) and (core.is_builtin(obj) or obj.__module__ == "triton.language.extra.libdevice")
    if inspect.ismethod(obj):
        return isinstance(obj.__self__, core.dtype) and _from_language(obj.__func__)
    return inspect.isbuiltin(obj) and getattr(obj, "__module__", None) == "math"


def _from_language(obj: Any) -> bool:
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "triton.language" or module.startswith("triton.language."))


def _jit_callable(obj: Any) -> bool:
    """A `@triton.jit` / `@triton.constexpr_function` object (an interpreted one under the interpreter)."""
    return type(obj).__module__ in ("triton.runtime.jit", "triton.runtime.interpreter") and inspect.isfunction(
        getattr(obj, "fn", None))


def _language_enum(obj: Any) -> bool:
    """An enum class of Triton's language options (`tl.PropagateNan`)."""
    import enum

    from triton.language import core

    return inspect.isclass(obj) and issubclass(obj, enum.Enum) and (
        _from_language(obj) or obj is getattr(core, "PropagateNan", None))


def _backend_module(module: Any, view: dict[str, str]) -> Any:
    import importlib

    target = view.get(module.__name__)
    return importlib.import_module(target) if target else module


_LANGUAGE_IMPORTED = False


def _import_language_modules() -> None:
    """Import every submodule of `triton.language` once, so that a path never names a submodule that
    is missing when it is checked and present when the kernel runs."""
    global _LANGUAGE_IMPORTED
    if _LANGUAGE_IMPORTED:
        return
    import importlib
    import pkgutil

    import triton.language

    for info in pkgutil.walk_packages(triton.language.__path__, "triton.language."):
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - a backend's module that cannot load here is not reachable either
            pass
    _LANGUAGE_IMPORTED = True


# ---------------------------------------------------------------- rebuild (trusted side)
def module_text(specs: dict[str, KernelSpec]) -> str:
    """A Python module defining every kernel under `@triton.jit`, from checked specs only."""
    lines = ["import math", "import triton", "import triton.language"]
    done: set[str] = set()
    for spec in specs.values():
        for alias, module in sorted(spec.modules.items()):
            if alias not in done:
                lines.append(f"import {module} as {alias}" if "." in module or alias != module else f"import {module}")
                done.add(alias)
    for spec in specs.values():
        for name, target in sorted(spec.imports.items()):
            if name not in done:
                module, attr = target.split(":")
                lines.append(f"from {module} import {attr} as {name}")
                done.add(name)
    for spec in specs.values():
        for name, value in sorted(spec.constants.items()):
            if name in done:
                continue
            done.add(name)
            expr = _constant_expr(value)
            lines.append(f"{name} = triton.language.constexpr({expr})" if name in spec.constexpr_constants
                         else f"{name} = {expr}")
    for spec in specs.values():
        opts = ", ".join(f"{k}={v!r}" for k, v in sorted(spec.jit_options.items()))
        decorator = "@triton.language.constexpr" if spec.constexpr_function else (
            f"@triton.jit({opts})" if opts else "@triton.jit")
        lines += ["", "", decorator, spec.src.rstrip()]
    return "\n".join(lines) + "\n"


def _constant_expr(value: Any) -> str:
    if isinstance(value, dict) and "tl_dtype" in value:
        return f"triton.language.{value['tl_dtype']}"
    if isinstance(value, dict) and "float" in value:
        return f"float({value['float']!r})"
    if isinstance(value, dict) and "tuple" in value:
        return "(" + "".join(_constant_expr(v) + ", " for v in value["tuple"]) + ")"
    return repr(value)


def decode_constant(value: Any) -> Any:
    """A constant from `encode_constant` back to its Python value (trusted side)."""
    if isinstance(value, dict) and "tl_dtype" in value:
        dtype = _tl_dtype(value["tl_dtype"])
        if dtype is None:
            raise ValueError(f"unknown Triton dtype {value['tl_dtype']!r}")
        return dtype
    if isinstance(value, dict) and "float" in value:
        if value["float"] not in ("inf", "-inf", "nan"):
            raise ValueError("bad float constant")
        return float(value["float"])
    if isinstance(value, dict) and "tuple" in value:
        return tuple(decode_constant(v) for v in value["tuple"])
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise ValueError(f"not a constant: {type(value).__name__}")


def load_kernels(specs: dict[str, KernelSpec]) -> dict[str, Any]:
    """Define the checked kernels as a module and return name -> JIT function. Call only after
    `kernel_problems(specs)` returned nothing. The source never touches the file system (Triton
    reads it back through `linecache`), so no other process can swap it between check and use."""
    import linecache
    import secrets
    import types

    text = module_text(specs)
    filename = f"<kernelgym-replayed-kernels-{secrets.token_hex(8)}>"
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    module = types.ModuleType(filename)
    module.__file__ = filename
    exec(compile(text, filename, "exec"), module.__dict__)  # noqa: S102 - generated from checked specs only
    return {name: getattr(module, name) for name in specs}
