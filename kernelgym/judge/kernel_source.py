"""The answer's `@triton.jit` functions as data: captured in the recording child, checked and rebuilt
in the replay process.

Triton's front end runs Python while it compiles a kernel: a call to any Python callable the kernel
can name is made at compile time, default values and annotations run when the `def` runs. So the
replay process, which must never run answer Python, compiles only kernels whose source passes
`kernel_problems`: every name a kernel uses is a parameter, a local, another captured kernel, a
constant number, or public Triton language (`tl.*`, `tl.math.*`, libdevice, `triton.cdiv`, ...);
no private or dunder attribute, no nested function, lambda, import or try. That is the language a
GPU compiles; `compile_check` proves it on the CPU too, by lowering each kernel to Triton IR for a
GPU target before the interpreter runs it.

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
from dataclasses import dataclass, field
from typing import Any

# Modules a kernel may name, by their `__name__` (aliases are free: `tl`, `libdevice`, `tlmath`).
ALLOWED_MODULES = ("triton", "triton.language", "math")
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
# Attributes of the `triton` package a kernel body may use besides `triton.language`.
TRITON_TOP_LEVEL = {"language", "cdiv", "next_power_of_2", "jit", "constexpr"}
# Builtins Triton's code generator implements (plus a few it folds on constants).
ALLOWED_BUILTINS = {"range", "len", "min", "max", "float", "int", "bool", "isinstance", "print", "tuple",
                    "abs", "list", "zip", "enumerate", "True", "False", "None", "getattr", "hasattr"}
_DISALLOWED_NODES = (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import,
                     ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Try, ast.With, ast.AsyncWith, ast.Yield,
                     ast.YieldFrom, ast.Await, ast.Delete, ast.NamedExpr, ast.Break, ast.Continue)
# Attributes of values inside a kernel (tensors, dtypes, constexprs, tuples) besides Triton's public
# methods: `x.dtype.element_ty`, `BLOCK.value`. Not `.handle` (the interpreter's numpy array, whose
# methods reach the file system) nor anything private.
_VALUE_ATTRIBUTES = {"shape", "numel", "element_ty", "primitive_bitwidth", "int_bitwidth", "fp_mantissa_width",
                     "exponent_bias", "name", "type", "value", "values", "scalar", "dtype", "T", "int_signedness",
                     "itemsize", "block_shape", "strides", "base", "layout", "nbytes"}
_NOT_VALUE_ATTRIBUTES = {"handle", "to_ir", "codegen_name", "mangle", "cache_key_part", "from_ir"}
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

    def to_wire(self) -> dict[str, Any]:
        return {"name": self.name, "src": self.src, "modules": dict(self.modules), "constants": dict(self.constants),
                "constexpr_constants": list(self.constexpr_constants), "helpers": list(self.helpers),
                "imports": dict(self.imports), "jit_options": dict(self.jit_options)}

    @classmethod
    def from_wire(cls, d: Any) -> "KernelSpec":
        if not isinstance(d, dict) or not isinstance(d.get("name"), str) or not isinstance(d.get("src"), str):
            raise ValueError("malformed kernel spec")
        return cls(name=d["name"], src=d["src"], modules=dict(d.get("modules") or {}),
                   constants=dict(d.get("constants") or {}), constexpr_constants=list(d.get("constexpr_constants") or []),
                   helpers=list(d.get("helpers") or []), imports=dict(d.get("imports") or {}), jit_options=dict(d.get("jit_options") or {}))


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
    name = fn.__name__
    src = function_source(fn)
    existing = into.get(name)
    if existing is not None:
        if existing.src != src:
            raise CaptureError(f"two different kernels are named {name}: give each @triton.jit function its own name")
        return name
    spec = KernelSpec(name=name, src=src, jit_options=_jit_options(kernel))
    into[name] = spec
    scope = dict(fn.__globals__)
    if fn.__closure__:
        scope |= {n: c.cell_contents for n, c in zip(fn.__code__.co_freevars, fn.__closure__)}
    for ref in sorted(free_names(src)):
        if ref not in scope:
            continue  # a builtin (checked on the trusted side) or an undefined name (Triton will say)
        _capture_global(spec, ref, scope[ref], into)
    return name


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
        for name, value in (*spec.modules.items(), *spec.constants.items(), *spec.imports.items(),
                            *((h, h) for h in spec.helpers)):
            if name in bindings and bindings[name] != value:
                problems.append(f"the kernels bind the global name {name} to different values; rename one")
            bindings.setdefault(name, value)
        for name, value in spec.constants.items():
            if not _IDENT.match(name) or not _constant_ok(value):
                problems.append(f"kernel {spec.name}: global {name} is not a plain constant")
        problems += [f"kernel {spec.name}: {p}" for p in _source_problems(spec, specs)]
    return problems


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
        and not attr.startswith("_") and _path_allowed([module, attr])


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
    problems: list[str] = []
    if any(re.match(r"\s*(def|class|@)\b", line) for line in spec.src.splitlines()[1:]):
        # Triton's interpreter finds a kernel's `def` by its own line scan: one `def` line per source
        problems.append("a line inside the kernel that begins like a definition or decorator")
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
    for node in ast.walk(fdef):
        if node is fdef:
            continue
        if isinstance(node, _DISALLOWED_NODES):
            problems.append(f"line {node.lineno}: {type(node).__name__.lower()} inside a kernel")
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                problems.append(f"line {node.lineno}: private attribute .{node.attr}")
            else:
                path = _module_path(node, spec)
                if path is not None and not _path_allowed(path):
                    problems.append(f"line {node.lineno}: {'.'.join(path)} is not Triton language")
                elif path is None and node.attr not in _value_attributes():
                    problems.append(f"line {node.lineno}: .{node.attr} is not an attribute of a Triton value")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            if node.id.startswith("__") or (node.id not in known and node.id in vars(builtins)
                                             and node.id not in ALLOWED_BUILTINS):
                problems.append(f"line {node.lineno}: {node.id} is not available in a kernel")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            if len(node.args) < 2 or not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                                          and _IDENT.match(node.args[1].value) and not node.args[1].value.startswith("_")):
                problems.append(f"line {node.lineno}: {node.func.id} needs a literal public attribute name")
            else:  # judged exactly like the attribute it names
                as_attr = ast.Attribute(value=node.args[0], attr=node.args[1].value, ctx=ast.Load())
                path = _module_path(as_attr, spec)
                if path is not None and not _path_allowed(path):
                    problems.append(f"line {node.lineno}: {'.'.join(path)} is not Triton language")
                elif path is None and node.args[1].value not in _value_attributes():
                    problems.append(f"line {node.lineno}: .{node.args[1].value} is not an attribute of a Triton value")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("__"):
            problems.append(f"line {node.lineno}: dunder string")
    return problems


def _value_attributes() -> set[str]:
    from triton.language import core

    names = set(_VALUE_ATTRIBUTES)
    for cls in (core.tensor, core.dtype, core.pointer_type, core.block_type, core.constexpr, core.tuple):
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
        path = _module_path(node, spec)
        return path is not None and _path_allowed(path)
    if isinstance(node, ast.Name):
        return node.id in spec.imports or node.id in _TYPE_BUILTINS
    if isinstance(node, ast.Constant) and node.value is None:
        return True
    return False


def _module_path(node: ast.Attribute, spec: KernelSpec) -> list[str] | None:
    """`tl.math.exp` -> ["triton.language", "math", "exp"] when the chain starts at a module alias."""
    parts: list[str] = []
    cur: ast.AST = node
    while True:
        if isinstance(cur, ast.Attribute):
            parts.append(cur.attr)
            cur = cur.value
        elif (isinstance(cur, ast.Call) and isinstance(cur.func, ast.Name) and cur.func.id == "getattr"
              and len(cur.args) >= 2 and isinstance(cur.args[1], ast.Constant) and isinstance(cur.args[1].value, str)):
            parts.append(cur.args[1].value)
            cur = cur.args[0]
        else:
            break
    if isinstance(cur, ast.Name) and cur.id in spec.modules:
        return [spec.modules[cur.id], *reversed(parts)]
    return None


def _path_allowed(path: list[str]) -> bool:
    """Resolve a dotted path over the real modules (public names only) and accept it when every
    step stays inside Triton's language (or is `triton.cdiv`-like, or math)."""
    import importlib

    root = path[0]
    if root == "triton":
        if len(path) < 2 or path[1] not in TRITON_TOP_LEVEL:
            return False
        if path[1] != "language":
            return len(path) == 2
        path = ["triton.language", *path[2:]]
        root = path[0]
    try:
        obj: Any = importlib.import_module(root)
    except ImportError:
        return False
    for part in path[1:]:
        if part.startswith("_"):
            return False
        if not inspect.ismodule(obj):
            return part in _value_attributes() and _language_object(obj)  # `tl.float32.primitive_bitwidth`
        if not _module_allowed(obj.__name__):
            return False
        if not hasattr(obj, part):
            return True  # Triton reports the missing name at compile time
        obj = getattr(obj, part)
    return _module_allowed(obj.__name__) if inspect.ismodule(obj) else _language_object(obj)


def _language_object(obj: Any) -> bool:
    """A value a kernel may reach through a module: defined in Triton's language (functions, classes,
    dtypes, constexprs), `triton.cdiv`-like helpers, a `math` function, or a plain number."""
    from triton.language import core

    if isinstance(obj, (bool, int, float, str, core.dtype, core.constexpr)) or obj is None:
        return True
    inner = getattr(obj, "fn", None)  # a JIT/interpreted function of Triton's own (`tl.max`)
    module = getattr(inner if inspect.isfunction(inner) else obj, "__module__", None)
    if not isinstance(module, str):
        module = getattr(type(obj), "__module__", "")
    return module.startswith("triton.language") or module == "math" or (
        module in ("triton.runtime.jit", "triton") and getattr(obj, "__name__", "") in ("cdiv", "next_power_of_2"))


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
        lines += ["", "", f"@triton.jit({opts})" if opts else "@triton.jit", spec.src.rstrip()]
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
