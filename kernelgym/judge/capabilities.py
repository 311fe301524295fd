"""Capability bans for judge v4: what an answer's Python may reach, read from its AST.

Under record-then-replay the answer's Python only records kernel launches in a confined child,
and every verdict comes from replaying them where no answer Python runs. So these rules never
guess at tensors and never call a cheat: they refuse what reaches out of the recording process
or into the interpreter (modules, builtins, introspection, dunders, monkeypatching), each as one
`invalid_answer` violation that names the line and the construct and says what is allowed.
`BANS` is the same list in words, for the answer contract and the prompt.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import importlib.util
import inspect
import io
import re
import string
import tokenize
import types
from dataclasses import dataclass, field

BANS = """\
- Answers are UTF-8: no other coding declaration. Every name used must be bound by the answer or be
  a builtin.
- Imports: only torch (with torch.nn, torch.nn.functional, torch.nn.init, torch.cuda, torch.xpu,
  torch.backends, torch.autograd, torch.amp, torch.linalg, torch.fft, torch.special, torch.testing;
  torch.distributed.tensor.DTensor/distribute_tensor/Replicate/Shard by full path), triton (with
  triton.language and its extra/libdevice modules, triton.runtime's driver/autotune/heuristics/Config,
  triton.tools.tensor_descriptor), math, typing, dataclasses, functools, itertools, operator, numbers,
  enum, collections, abc, warnings, contextlib (contextmanager, nullcontext, suppress, ExitStack) and
  `from __future__ import annotations`. No os, sys, subprocess,
  ctypes, gc, inspect, importlib, builtins, threading, multiprocessing, signal, socket, pickle, io,
  time, random, numpy, torch.utils, torch.jit, torch.ops, torch.library, torch.compile,
  torch.profiler, torch.backends.xeon, triton.testing, triton.compile; no relative or `*` imports. An object
  an allowed module re-exports from a banned one is that module (`torch.xpu.c_uint32` is ctypes,
  `torch.cuda.amp.common.find_spec` importlib's, `triton.language.extra.spec` the import system's).
- No names starting with `_` on torch or triton modules and classes (torch._C, torch._dynamo,
  torch.Tensor._make_subclass); no module reached through another module's attribute unless it is
  allowed itself (torch.os, typing.sys, enum.bltns are refused); use modules only by naming their
  attributes (`tl.load`) or by aliasing them (`F = torch.nn.functional`), never as values in lists,
  arguments or returns.
- No torch.load/save/from_file/get_device_module, torch.CompilationUnit/ScriptFunction/parse_ir/fork
  (TorchScript), `.compile()` calls (torch.compile), `.storage()` and the typed storages (TypedStorage,
  FloatStorage, ...), set_default_tensor_type or `.type("dotted.name")` (they import by name; the legacy
  "torch.cuda.HalfTensor" names are fine),
  process-wide hooks (`register_module_forward_hook`, `register_pytree_node`), torch.cuda.cudart or custom allocators,
  tl.inline_asm_elementwise or clock reads (globaltimer), `.tofile`/`.dump`/`.ctypes`/`.from_file`,
  `.numpy`/`.untyped_storage`/`from_numpy`/`frombuffer` (memory shared outside torch), also as
  keyword names of a `match` class pattern (`case object(__globals__=g)` reads an attribute by name);
  no `.untyped`, `to_dlpack`/`from_dlpack`, `.mro`, `.packed_metadata` (a raw launch past the recorder),
  `tl.str_to_ty`/`triton.aggregate` (they evaluate strings), no annotated class field named like these.
- Private attributes (`t._typed_storage()`) only where the answer sets or defines the attribute itself
  (`self._cache = ...`, a method `_launch`); where torch, triton or typing objects have one of that name
  too (`_forward_impl` no, `_reset_parameters` yes), only on `self`/`cls` in the answer's own methods, and
  such a method is called on an instance (not `C.m(other)`); plus nn.Module's `_modules`/`_parameters`/`_buffers`, namedtuple's
  `_replace`/`_asdict`/`_fields`/`_make`, Enum's `_value_`/`_name_`, `_version`/`_base`/`_is_view`/`_get_name`
  and the tutorials' `compiled._init_handles()`.
- No `type(x)(name, bases, dict)`, no Enum functional API (`Enum("E", names)`) and no Enum without
  members (the functional API extends any such Enum, the answer's own too), no ABCMeta;
  `functools.wraps` only as `@functools.wraps(f)`; `dataclass`, `total_ordering`, `final`, `unique` only as
  decorators of the answer's own classes; no `type()` of a class (its metaclass), no `type(x)` called with
  several arguments or handed on (returned, put in a container, passed to a function). Defaults,
  annotations and decorators are judged in the enclosing scope (`def f(exec=exec)` reads the builtin), a
  `global` name is the module's, and a name a class body binds is read there from the module or builtins.
- Builtins: no exec, eval, compile, open, input, breakpoint, help, exit, quit, globals, locals, vars,
  __import__; getattr/setattr/delattr/hasattr only with a literal attribute name that is not a dunder
  (one idiom excepted: `d = torch.device(...)` first in a function, then `getattr(torch, d.type, None)`);
  type() only with one argument; operator.attrgetter/methodcaller not at all.
- No dunder attributes (`x.__class__`, `__dict__`, `__globals__`, `__closure__`, `__subclasses__`)
  except `__init__`, `__name__`, `__qualname__`, `__doc__`, `__version__`; no dunder names but
  `__name__`, `__all__`, `__doc__`, `__version__`, `__file__`; no frame, generator or code
  attributes (`f_back`, `gi_frame`, `tb_frame`, `co_code`), also not through a format string's fields
  (`"{0.gi_frame.f_back}".format(g)` reads them by name). No subscript by a dunder key
  (`d["__builtins__"]`, `d.get("__import__")`); no `get_capture_scope` or `used_global_vals` of a kernel
  object (they hand out module globals); no `.signature`/`.from_callable` (annotation strings are evaluated),
  `.storage`, `.compile` (also not read for a later call) or `.obj` (an AttributeError's object). Classes may define `__init__`, `__post_init__`, `__call__`,
  `__repr__`/`__str__`, comparison and container dunders only; no metaclasses.
- No assignment to (or setattr/delattr on) modules or their classes and functions
  (`torch.allclose = ...`, `nn.Module.forward = ...`), nor on `type(x)`, a name bound to it or a loop
  variable over classes; no module as a class attribute (`tm = torch` in a class body: alias it at module
  level); torch.backends flags may be set but have no effect on the judge, which replays your launches in
  another process.
- Inside a @triton.jit kernel, no torch (it compiles only under the CPU interpreter).
- A class named `Model` (the reference) is not part of an answer: define ModelNew only.
- Allowed and judged at run time instead: try/except, lambdas, helper classes, dataclasses and
  NamedTuples, autotune/heuristics, torch.autograd.Function, torch.cuda streams and device queries,
  triton.runtime.driver.active device queries, kernel.warmup(...), printing.
"""

# -- modules ---------------------------------------------------------------------------------
# Allowed modules: exact names, and packages whose whole subtree is allowed (minus private parts
# and `_BANNED_SUBTREES`).
_MODULES = frozenset({
    "torch", "torch.nn", "torch.nn.functional", "torch.nn.init", "torch.nn.parameter", "torch.cuda",
    "torch.cuda.streams", "torch.cuda.graphs", "torch.cuda.random", "torch.cuda.nvtx", "torch.autograd",
    "torch.autograd.function", "torch.autograd.grad_mode", "torch.linalg", "torch.fft", "torch.special",
    "torch.types", "torch.version", "torch.torch_version", "torch.random", "torch.functional",
    "torch.return_types", "torch.testing", "torch.xpu", "triton", "triton.runtime", "triton.tools",
    "triton.tools.tensor_descriptor", "triton.runtime.autotuner", "triton.runtime.jit", "math", "typing",
    "dataclasses", "functools", "itertools", "operator",
    "numbers", "enum", "collections", "collections.abc", "abc", "warnings", "contextlib", "__future__",
})  # fmt: skip
_SUBTREES = ("torch.nn.", "torch.backends", "torch.amp", "torch.cuda.amp", "triton.language")
_BANNED_SUBTREES = ("torch.nn.parallel", "torch.nn.attention", "torch.backends._",
                    "torch.backends.xeon")  # run_cpu: a process launcher and ArgumentParser (scan review, session 11)
# Names an allowed module may hand out. A module listed here gives only these; others give their
# public names less `_DENIED_NAMES`.
_NAMES: dict[str, frozenset[str]] = {
    "triton": frozenset({
        "jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language", "runtime", "tools",
        "JITFunction", "KernelInterface", "OutOfResources", "CompilationError", "TritonError", "reinterpret",
        "TensorWrapper", "must_use_result", "constexpr_function", "set_allocator", "errors"}),
    "triton.runtime": frozenset({"driver", "autotune", "heuristics", "Config", "jit", "JITFunction", "Autotuner",
                                 "Heuristics", "KernelInterface", "OutOfResources", "errors"}),
    # the same objects under the modules that define them (real code imports them from there)
    "triton.runtime.autotuner": frozenset({"autotune", "heuristics", "Config", "Autotuner", "Heuristics"}),
    "triton.runtime.jit": frozenset({"jit", "JITFunction", "KernelInterface"}),
    "triton.tools": frozenset({"tensor_descriptor"}),
    "typing": frozenset({
        "Any", "Optional", "Union", "List", "Dict", "Tuple", "Set", "FrozenSet", "Sequence", "Mapping", "Callable",
        "Iterable", "Iterator", "Literal", "Final", "ClassVar", "NamedTuple", "TypedDict", "TypeVar", "Generic",
        "Protocol", "Type", "cast", "overload", "final", "TYPE_CHECKING", "Annotated", "Hashable", "Sized",
        "MutableMapping", "MutableSequence", "DefaultDict", "OrderedDict", "Deque", "Counter", "Self", "TypeAlias",
        "NoReturn", "get_args"}),  # not get_origin: get_origin(Type[int]) is `type` (scan review, session 11)
    "dataclasses": frozenset({"dataclass", "field", "fields", "asdict", "astuple", "replace", "is_dataclass",
                              "Field", "InitVar", "KW_ONLY", "MISSING", "FrozenInstanceError"}),
    "functools": frozenset({"lru_cache", "cache", "partial", "reduce", "wraps", "cached_property", "total_ordering",
                            "cmp_to_key", "partialmethod"}),
    "enum": frozenset({"Enum", "IntEnum", "Flag", "IntFlag", "StrEnum", "auto", "unique"}),
    "collections": frozenset({"namedtuple", "OrderedDict", "defaultdict", "deque", "Counter", "ChainMap", "abc"}),
    "abc": frozenset({"ABC", "abstractmethod"}),
    "warnings": frozenset({"warn", "filterwarnings", "simplefilter", "catch_warnings"}),
    "contextlib": frozenset({"contextmanager", "nullcontext", "suppress", "ExitStack"}),
    "__future__": frozenset({"annotations"}),
}  # fmt: skip
_DENIED_NAMES: dict[str, frozenset[str]] = {
    "torch": frozenset({"load", "save", "from_file", "compile", "get_device_module", "import_ir_module",
                        "import_ir_module_from_buffer", "PyTorchFileReader", "PyTorchFileWriter", "get_file_path",
                        "prepare_multiprocessing_environment",
                        # torch.jit re-exported (TorchScript from a string reaches torch.ops), a dotted-name import
                        "CompilationUnit", "ScriptFunction", "ScriptModule", "ScriptMethod", "set_default_tensor_type",
                        "parse_ir", "fork", "wait", "ScriptClass", "ScriptObject", "LiteScriptModule", "Graph",
                        "ConcreteModuleType", "ExecutionPlan"}),
    # hooks on every nn.Module call of the process: a global patch in effect
    "torch.nn.modules.module": frozenset({
        "register_module_forward_hook", "register_module_forward_pre_hook", "register_module_backward_hook",
        "register_module_full_backward_hook", "register_module_full_backward_pre_hook",
        "register_module_buffer_registration_hook", "register_module_module_registration_hook",
        "register_module_parameter_registration_hook"}),
    "torch.cuda": frozenset({"cudart", "CUDAPluggableAllocator", "change_current_allocator",
                             "caching_allocator_alloc", "caching_allocator_delete"}),
    "torch.xpu": frozenset({"XPUPluggableAllocator", "change_current_allocator"}),
    "operator": frozenset({"attrgetter", "methodcaller"}),  # getattr by string, dunders included
    # They read any file's lines through linecache (red-team rounds s23, s24)
    "warnings": frozenset({"formatwarning", "showwarning", "warn_explicit"}),
    # They evaluate strings: part of the argument, string annotations (review of round v4k).
    "triton.language": frozenset({"str_to_ty", "aggregate"}),
}
# triton.runtime.driver is an object, not a module: only the device queries the tutorials use.
_DRIVER_PATHS = frozenset({
    "triton.runtime.driver", "triton.runtime.driver.active", "triton.runtime.driver.active.utils",
    "triton.runtime.driver.active.get_active_torch_device", "triton.runtime.driver.active.get_current_device",
    "triton.runtime.driver.active.get_current_target", "triton.runtime.driver.active.get_current_stream",
    "triton.runtime.driver.active.utils.get_device_properties"})  # fmt: skip
# Objects (and what lies under them) of modules outside the contract that real code names: Liger-Kernel's
# DTensor paths. None of them starts a process group (init_process_group / init_device_mesh stay out).
# Names of private torch modules that real Triton libraries import one by one (FlagGems' dtype predicates and
# type promotion): plain functions and an enum of torch._prims_common that read dtypes and dims and return
# values. Only `from MODULE import NAME` of these; the module object itself (whose attributes reach
# `inspect` through `wrappers`) stays out.
_PRIVATE_FROM_IMPORTS: dict[str, frozenset[str]] = {
    "torch._prims_common": frozenset({
        "is_boolean_dtype", "is_integer_dtype", "is_float_dtype", "is_complex_dtype", "is_low_precision_dtype",
        "canonicalize_dim", "canonicalize_dims", "elementwise_dtypes", "ELEMENTWISE_TYPE_PROMOTION_KIND",
        "get_computation_dtype", "is_weakly_lesser_type", "dtype_to_type"}),
}  # fmt: skip
_EXTRA_PATHS = frozenset({"torch.distributed.tensor.DTensor", "torch.distributed.tensor.distribute_tensor",
                          "torch.distributed.tensor.Replicate", "torch.distributed.tensor.Shard",
                          "torch.distributed.is_available", "torch.distributed.is_initialized"})
_DRIVER_LEAVES = frozenset(p for p in _DRIVER_PATHS if p.rsplit(".", 1)[1].startswith("get_"))

# -- attributes and names --------------------------------------------------------------------
_DUNDER_ATTRIBUTES = frozenset({"__init__", "__name__", "__qualname__", "__doc__", "__version__"})
_DUNDER_NAMES = frozenset({"__name__", "__all__", "__doc__", "__version__", "__file__", "__qualname__",
                           "__module__", "__slots__"})
_DEFINABLE_DUNDERS = frozenset({
    "__init__", "__post_init__", "__call__", "__repr__", "__str__", "__len__", "__getitem__", "__setitem__",
    "__iter__", "__next__", "__contains__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__hash__",
    "__bool__", "__int__", "__float__", "__index__", "__enter__", "__exit__", "__slots__", "__doc__", "__module__",
    "__qualname__"})  # fmt: skip
# Reach the interpreter's frames and code objects (expected outputs in harness frames; code rebuilt
# with other names).
_FRAME_ATTRIBUTES = frozenset({
    "f_back", "f_builtins", "f_code", "f_globals", "f_locals", "f_lasti", "f_trace", "gi_code", "gi_frame",
    "gi_yieldfrom", "cr_code", "cr_frame", "cr_await", "cr_origin", "ag_code", "ag_frame", "ag_await", "tb_frame",
    "tb_next", "co_code", "co_consts", "co_names", "co_varnames", "co_filename"})  # fmt: skip
# Anywhere: files, native libraries, raw PTX and device clocks.
_BANNED_ATTRIBUTES = {
    # Triton's interpreter rebuilds a kernel from a syntax tree through these: an answer's own transformer made
    # the tree anything, and `rewrite_ast()` ran it (red-team round s27).
    "rewriter": "rebuilds a kernel from a syntax tree (Triton's interpreter)",
    "ast_transformer": "rewrites a kernel's syntax tree (Triton's interpreter)",
    "rewrite_ast": "runs a rewritten kernel tree (Triton's interpreter)",
    "rewrite": "runs a rewritten kernel tree (Triton's interpreter)",
    "rewritten_fn": "holds the functions interpreted launches run (Triton's interpreter)",
    # A device address as an integer: under the CPU interpreter an address is host memory, and offsets from one
    # to `id()` of a Python object reached the builtins (red-team round s28). Kernels reach memory only through
    # the pointers they are handed (the answer contract's rule since v3: `contract.ADDRESS_METHODS`).
    "data_ptr": "gives a tensor's address as an integer (pass the tensor to the kernel instead)",
    "from_file": "maps a file into memory", "tofile": "writes a file", "dump": "writes a file",
    "ctypes": "reaches native memory and libraries", "load_library": "loads a native library",
    "inline_asm_elementwise": "runs raw PTX (any address, clocks)", "globaltimer": "reads a clock inside a kernel",
    # A tensor over memory another tensor owns, made outside torch's operators (red-team v4k: the model's
    # workspace passed off as a tensor built from host data).
    "numpy": "reads and shares tensor memory outside torch", "from_numpy": "shares memory outside torch",
    "frombuffer": "shares memory outside torch", "untyped_storage": "reaches a tensor's raw storage",
    "untyped": "reaches a tensor's raw storage", "to_dlpack": "shares memory outside torch",
    "from_dlpack": "shares memory outside torch",
    # Review of round v4k (helper-29): raw launches and class internals.
    "mro": "reaches base classes whose methods no judge hook wraps",
    "packed_metadata": "launches a compiled kernel past the recorder",
    # process-wide registries: every nn.Module call of the process, the pytree flattening the harness uses
    **{f"register_module_{hook}": "hooks every nn.Module of the process (a global patch)" for hook in (
        "forward_hook", "forward_pre_hook", "backward_hook", "full_backward_hook", "full_backward_pre_hook",
        "buffer_registration_hook", "module_registration_hook", "parameter_registration_hook")},
    "register_pytree_node": "changes how every pytree of the process is flattened",
    # Red-team round s12: Triton runs these hooks inside the launch, where the recorder counts nothing, so
    # torch work in one is hidden from RH-01 (the replay runs no hook: a cheat laundered into wrong_output).
    "add_pre_run_hook": "runs answer code inside Triton's launch, where the recorder does not look",
    "pre_run_hooks": "runs answer code inside Triton's launch, where the recorder does not look",
    # Red-team round s20: a kernel object built over any function hands out that function's module globals,
    # with their `__builtins__` (`JITFunction(f).get_capture_scope()`, `used_global_vals` after `cache_key`).
    "get_capture_scope": "hands out the module globals of the function a kernel wraps (and their builtins)",
    "used_global_vals": "hands out the module globals of the function a kernel wraps (and their builtins)",
    # Red-team round s21: read first and called later (`c = m.compile; c()`), these passed the call-only rules.
    "compile": "reaches torch.compile (nn.Module.compile); write Triton",
    "storage": "reaches a tensor's typed storage, outside the contract (its .type('a.b') imports any module); "
               "use data_ptr(), numel() and element_size()",
    # `inspect.Signature` objects (`kernel.signature`, any tl builtin's): from_callable(f, eval_str=True) evals text.
    "signature": "is an inspect.Signature, which evaluates annotation strings (from_callable(..., eval_str=True))",
    "from_callable": "evaluates annotation strings (eval_str=True)",
    # AttributeError.obj is the object the failed read was made on: `torch.nope` hands torch on under a new name.
    "obj": "hands on the object a failed read was made on (AttributeError.obj: a module, by a new name)",
}  # fmt: skip
# Banned attributes that hand out memory (a dataclass field of that name on a Tensor subclass reads them).
_MEMORY_ATTRIBUTES = frozenset({"numpy", "from_numpy", "frombuffer", "untyped_storage", "untyped", "to_dlpack",
                                "from_dlpack", "mro", "packed_metadata", "ctypes"})
# Private attributes of nn.Module that honest layer code reads (submodules, parameters, buffers).
_PRIVATE_ALLOWED = frozenset({"_modules", "_parameters", "_buffers",
                              "_init_handles",  # the fused-softmax tutorial's occupancy idiom (then n_regs)
                              "_replace", "_asdict", "_fields", "_make", "_field_defaults",  # namedtuple's API
                              "_value_", "_name_",  # Enum members
                              "_version", "_base", "_is_view", "_get_name"})  # read-only tensor/module facts
# Enum's functional API builds a class from names given as data (dunders included); ABCMeta builds one too.
_CLASS_FACTORIES = frozenset({"enum.Enum", "enum.IntEnum", "enum.Flag", "enum.IntFlag", "enum.StrEnum"})
# Class decorators that rewrite the class they are given: only over the answer's own class statements.
_CLASS_DECORATORS = frozenset({"dataclasses.dataclass", "functools.total_ordering", "typing.final", "enum.unique",
                               "typing.runtime_checkable"})
_BANNED_BUILTINS = {
    "exec": "runs code from a string", "eval": "runs code from a string", "compile": "builds code from a string",
    "open": "opens files", "input": "reads stdin", "breakpoint": "starts a debugger", "help": "starts a pager",
    "exit": "ends the process", "quit": "ends the process", "copyright": "reads files", "credits": "reads files",
    "license": "reads files", "globals": "exposes the module namespace", "locals": "exposes a frame's namespace",
    "vars": "exposes an object's __dict__",
}  # fmt: skip
_NAME_BUILTINS = ("getattr", "setattr", "delattr", "hasattr")
# Methods refused when called (`m.compile()`, `t.storage()`), and so also when read by name (getattr, match).
_CALL_BANNED = frozenset({"compile", "storage"})
# Legacy tensor type names `.type()` accepts without importing anything beyond torch.
_TENSOR_TYPE_NAME = re.compile(r"torch(\.cuda)?\.(Float|Double|Half|BFloat16|Byte|Char|Short|Int|Long|Bool)Tensor")
# Calls that may take `type(x)` as an argument: they read it and hand nothing on.
_TYPE_CONSUMERS = frozenset({"isinstance", "issubclass", "str", "repr", "print", "id", "hash", "format", "getattr",
                             "hasattr", "setattr", "delattr"})  # (setattr and delattr: their own rule)
_KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics", "triton.runtime.jit",
                                "triton.runtime.autotune", "triton.runtime.heuristics"})
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)


@dataclass
class CapabilityReport:
    """What the capability scan found: whether the answer defines ModelNew, its Triton kernels
    (functions under triton.jit, also through autotune/heuristics), and one violation per banned
    construct ("line N: ... is not allowed: why; what to use instead")."""

    has_model_new: bool = False
    kernels: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)


def scan(code: str) -> CapabilityReport:
    """Apply the capability bans to `code`. Raises `SyntaxError` for unparsable code."""
    from kernelgym.ast_parse import parse

    cookie = _foreign_coding(code)
    if cookie:
        return CapabilityReport(violations=[f"line 1: a coding declaration ({cookie}) is not allowed: answers are "
                                            "UTF-8 text and the judge reads them as such; remove it"])
    tree = parse(code)
    scanner = _Scanner(tree)
    scanner.lines = code.splitlines()
    scanner.visit(tree)
    kernels = sorted(scanner.kernels, key=scanner.kernels.get)
    return CapabilityReport(has_model_new=scanner.has_model_new, kernels=kernels,
                            violations=list(dict.fromkeys(scanner.violations)))


def _foreign_coding(code: str) -> str:
    """A PEP 263 coding declaration other than UTF-8: the interpreter would run other text than the one read here."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(code.encode("utf-8", errors="surrogatepass")).readline)
    except SyntaxError as e:
        return str(e)[:60]
    return "" if encoding in ("utf-8", "utf-8-sig") else encoding


# -- module facts (computed once per process from the installed packages) -------------------------
def module_allowed(name: str) -> bool:
    """Whether an answer may import or reach the module `name`."""
    if any(part.startswith("_") for part in name.split(".")) and name != "__future__":
        return False
    if any(name == b or name.startswith(b + ".") or (b.endswith("_") and name.startswith(b)) for b in _BANNED_SUBTREES):
        return False
    return name in _MODULES or any(name.startswith(s) if s.endswith(".") else (name == s or name.startswith(s + "."))
                                   for s in _SUBTREES)


def _name_allowed(module: str, name: str) -> bool:
    if (module == "torch" or module.startswith("torch.")) and name.endswith("Storage"):
        return False  # TypedStorage, UntypedStorage, the legacy (torch.cuda.)FloatStorage...: `.type("a.b")` imports
    if module in _NAMES:
        return name in _NAMES[module]
    if module.startswith("triton.language") and name in _BANNED_ATTRIBUTES:
        return False
    return name not in _DENIED_NAMES.get(module, ())


@functools.cache
def _lookup(path: str) -> tuple[str, object]:
    """Resolve a dotted path from an allowed root: ("module", module), ("object", obj), ("unknown", None)
    or ("banned", what). Reads module namespaces and static attributes only (no getattr side effects)."""
    if any(path == p or path.startswith(p + ".") for p in _EXTRA_PATHS):
        return "object", None
    if path in ("torch.distributed", "torch.distributed.tensor"):
        return "unknown", None  # only as the way to an _EXTRA_PATHS name
    parts = path.split(".")
    if not module_allowed(parts[0]):
        return "banned", f"the module '{parts[0]}'"
    obj: object = importlib.import_module(parts[0])
    where = parts[0]
    for part in parts[1:]:
        if _dunder(part):
            return "unknown", None  # the dunder rule reports it
        wrapper, obj = obj, _forwarded_module(obj)
        if isinstance(obj, types.ModuleType):
            mod = obj.__name__
            if part.startswith("_"):
                return "banned", f"the private name '{mod}.{part}'"
            value = vars(obj).get(part, _MISSING)
            if value is _MISSING and wrapper is not obj:
                # The wrapper's own names: `torch.backends.cudnn.m` is the module it wraps. Left unresolved, the
                # path stopped being checked there, and `.m.torch.hub` reached torch.hub (red-team round s24).
                value = vars(wrapper).get(part, _MISSING)
            if value is _MISSING:
                if _find_spec(f"{mod}.{part}"):
                    if not module_allowed(f"{mod}.{part}"):
                        return "banned", f"the module {mod}.{part}"
                    value = importlib.import_module(f"{mod}.{part}")
                elif mod in _NAMES and part not in _NAMES[mod]:
                    return "banned", f"'{mod}.{part}'"
                elif "__getattr__" in vars(obj) or "__getattr__" in vars(type(wrapper)):
                    # A name the module makes when it is read (PEP 562, a forwarding wrapper): what it hands out
                    # cannot be checked here, and nothing after it would be (red-team round s24).
                    return "banned", f"'{mod}.{part}', a name no module defines: its __getattr__ would make it at run time, unchecked"
                else:
                    return "unknown", None
            if isinstance(value, types.ModuleType):
                if not module_allowed(value.__name__):
                    return "banned", f"the module {value.__name__} (as {where}.{part})"
                obj, where = value, value.__name__
                continue
            if not _name_allowed(mod, part):
                return "banned", f"'{mod}.{part}'"
            origin = _banned_origin(value)
            if origin:
                return "banned", f"'{mod}.{part}' (an object of {origin})"
            obj, where = value, f"{mod}.{part}"
            continue
        if where.startswith("triton.runtime.driver"):
            where = f"{where}.{part}"
            if where not in _DRIVER_PATHS:
                return "banned", f"'{where}' (the driver gives only {', '.join(sorted(_DRIVER_LEAVES))})"
            continue
        if part.startswith("_") and where.split(".")[0] in ("torch", "triton"):
            return "banned", f"the private name '{where}.{part}'"
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            return "unknown", None
        where = f"{where}.{part}"
        origin = _banned_origin(obj)
        if origin:
            return "banned", f"'{where}' (an object of {origin})"
        if isinstance(obj, types.ModuleType) and not module_allowed(obj.__name__):
            return "banned", f"the module {obj.__name__} (as {where})"
    return ("module" if isinstance(obj, types.ModuleType) else "object"), obj


_MISSING = object()


def _forwarded_module(obj: object) -> object:
    """The module behind an object that forwards attribute reads to it (`torch.backends.cudnn` is a
    `PropModule` (a module subclass) over the real module: `torch.backends.cudnn.os` is that module's `os`, red-team round s21)."""
    if not any(c.__name__ == "PropModule" for c in type(obj).__mro__):  # CudnnModule, MkldnnModule... too
        return obj
    inner = getattr(obj, "__dict__", {}).get("m")
    return inner if isinstance(inner, types.ModuleType) else obj

# Where an object an allowed module hands out comes from: a function or class re-exported from a module the
# contract bans is that module (`torch.xpu.c_uint32` is ctypes, `torch.cuda.amp.common.find_spec` importlib's,
# `triton.language.extra.spec` an import-system object: scan review, session 11).
_BANNED_ORIGINS = ("ctypes", "_ctypes", "importlib", "_frozen_importlib", "_frozen_importlib_external", "zipimport",
                   "argparse", "logging", "os", "posix", "posixpath", "sys", "subprocess", "_posixsubprocess",
                   "inspect", "gc", "pickle", "_pickle", "io", "_io", "shutil", "pathlib", "socket", "_socket",
                   "threading", "_thread", "multiprocessing", "signal", "runpy", "code", "codeop", "pdb", "bdb",
                   "tempfile", "marshal", "builtins", "torch.jit", "torch.distributed.elastic", "torch.backends.xeon",
                   "torch.hub", "torch.package", "torch.serialization", "torch.utils.cpp_extension")  # fmt: skip


def _banned_origin(value: object) -> str:
    """The banned module `value` comes from ('' if none): its own `__module__` for functions and classes,
    its type's for other objects. Builtins (`builtins.len`) count only where a banned builtin's name is theirs."""
    if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        origin = getattr(value, "__module__", None)
    else:
        origin = type(value).__module__
    if not isinstance(origin, str):
        return ""
    if origin == "builtins":
        name = getattr(value, "__name__", "")
        return "builtins" if isinstance(value, types.BuiltinFunctionType) and name in _BANNED_BUILTINS else ""
    for banned in _BANNED_ORIGINS:
        if banned != "builtins" and (origin == banned or origin.startswith(banned + ".")):
            return origin
    return ""


def _find_spec(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def module_holder_names() -> frozenset[str]:
    """Attribute names under which an allowed module holds a module that is not allowed (`typing.sys`,
    `enum.bltns`, `torch.os`): refused on any value the scan cannot resolve (`_M[0].sys`)."""
    seen: set[str] = set()
    names: set[str] = set()
    todo = [importlib.import_module(m) for m in ("torch", "triton", "triton.language", "math", "typing",
                                                  "dataclasses", "functools", "itertools", "operator", "numbers",
                                                  "enum", "collections", "abc", "warnings", "contextlib")]
    while todo:
        mod = todo.pop()
        if mod.__name__ in seen:
            continue
        seen.add(mod.__name__)
        for attr, value in list(vars(mod).items()):
            if isinstance(value, types.ModuleType):
                if module_allowed(value.__name__):
                    todo.append(value)
                elif attr.startswith("_") or value.__name__.split(".")[0] not in ("torch", "triton"):
                    names.add(attr)  # torch's own public submodules (nn.modules.conv) are ordinary names
    return frozenset(names)


@functools.cache
def foreign_private_names() -> frozenset[str]:
    """Private (`_x`, not dunder) attribute names of the objects an answer holds: tensors and storages, modules
    and their layers, autograd contexts, Triton kernels, launchers and configs, typing's forward references
    and aliases; class attributes by `dir`, instance attributes from the classes' sources (`self._src = ...`)."""
    import typing

    import torch

    classes: set[type] = {typing.ForwardRef, type(typing.List[int]), type(typing.Union[int, str]), functools.partial,
                          torch.Tensor, torch.nn.Parameter, torch.UntypedStorage, torch.TypedStorage, torch.Generator,
                          torch.cuda.Event, torch.cuda.Stream, torch.autograd.function.FunctionCtx}
    classes.update(v for v in vars(torch.nn).values() if isinstance(v, type) and issubclass(v, torch.nn.Module))
    for path in ("triton.runtime.jit.JITFunction", "triton.runtime.jit.KernelInterface",
                 "triton.runtime.autotuner.Autotuner", "triton.runtime.autotuner.Heuristics",
                 "triton.runtime.autotuner.Config", "triton.compiler.CompiledKernel"):
        try:
            mod_name, cls_name = path.rsplit(".", 1)
            classes.add(getattr(importlib.import_module(mod_name), cls_name))
        except (ImportError, AttributeError):
            pass
    # Classes of the allowed standard library modules too: `warnings.catch_warnings()._module` is the warnings
    # module, and a `self._module = None` of the answer's made `_module` its own name (red-team round s23).
    stdlib = [m for m in sorted(_MODULES) if m.split(".")[0] not in ("torch", "triton", "__future__")]
    for name in stdlib:
        classes.update(v for v in vars(importlib.import_module(name)).values() if isinstance(v, type))
    roots = {"torch", "triton", *(m.split(".")[0] for m in stdlib)}
    names = {name for cls in classes for name in dir(cls) if name.startswith("_") and not _dunder(name)}
    # attributes set per instance (`self._run = ...`, `super().__setattr__("_forward_hooks", ...)`), read from
    # the source files that define these classes (whole files: cheap, and a superset)
    files = set()
    for cls in classes:
        for klass in cls.__mro__:
            if klass.__module__.split(".")[0] in roots:
                try:
                    files.add(inspect.getsourcefile(klass))
                except TypeError:
                    pass
    for file in files - {None}:
        try:
            src = open(file, encoding="utf-8").read()
        except OSError:
            continue
        names.update(re.findall(r"self\.(_[A-Za-z]\w*)\s*(?::[^=\n]*)?=[^=]", src))
        names.update(re.findall(r"__setattr__\(\s*[\"'](_[A-Za-z]\w*)[\"']", src))
    return frozenset(n for n in names if not _dunder(n))


def _format_field_attributes(text: str) -> list[str]:
    """The attribute names the replacement fields of a format string read (`{0.a.b[1].c}`: a, b, c), nested
    fields in format specs included; [] for text that is not a valid format string."""
    found: list[str] = []
    try:
        fields = list(string.Formatter().parse(text))
    except (ValueError, TypeError):
        return found
    for _, field, spec, _ in fields:
        if field:
            found += re.findall(r"\.([^.\[]+)", field)
        if spec and "{" in spec:
            found += _format_field_attributes(spec)
    return found


def _enum_members(node: ast.ClassDef) -> bool:
    """Whether a class statement gives an Enum members (class-level names bound to values)."""
    for stmt in node.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else (
            [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else [])
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and not n.id.startswith("_"):
                    return True
    return False


def _unwrapped(node: ast.AST) -> ast.AST:
    """The value a walrus hands on (`(T := type(x)).add = f` stores on `type(x)`)."""
    while isinstance(node, ast.NamedExpr):
        node = node.value
    return node


def _several_arguments(call: ast.Call) -> bool:
    """More than one argument, a starred one (`type(*args)`) or any keyword."""
    return len(call.args) > 1 or bool(call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)


def _type_call(node: ast.AST) -> bool:
    """`type(x)`: the class of a value (the builtin, called with one argument)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type"
            and len(node.args) == 1)


def _dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


# -- the scan ---------------------------------------------------------------------------------
class _Scanner(ast.NodeVisitor):
    def __init__(self, tree: ast.Module) -> None:
        self.violations: list[str] = []
        self.kernels: dict[str, int] = {}  # name -> line
        self.has_model_new = False
        self.parents: dict[ast.AST, ast.AST] = {}
        self.annotations: set[int] = set()
        nodes = list(ast.walk(tree))
        for node in nodes:
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            for ann in _annotations(node):
                self.annotations.update(id(n) for n in ast.walk(ann))
        self.aliases = _aliases(nodes)
        self.module_bound = self._module_bound(nodes)
        self.bound = _bound_names(nodes)
        self.class_binds = {n: _class_scope_binds(n) for n in nodes if isinstance(n, ast.ClassDef)}
        # Attribute names the answer sets or defines itself (`self._cache = ...`, a method `_launch`).
        self.own_attributes = frozenset(
            {n.attr for n in nodes if isinstance(n, ast.Attribute) and not isinstance(n.ctx, ast.Load)}
            | {name for binds in self.class_binds.values() for name in binds})
        self.in_kernel = False
        self.lines: list[str] = []  # the answer's text (`scan`): a kernel's `def` line as Triton reads it
        # Names a kernel body may read: its own, the module's, an enclosing function's (`None` outside kernels).
        self.kernel_names: frozenset[str] | None = None
        self.module_names = _class_scope_binds(tree) - _declared_only(tree)
        # the answer's own functions, lambdas and classes: Python a kernel must not call
        # (a decorated function may be a constexpr function, `@tl.constexpr def` in FlagGems: Triton's own idiom)
        self.host_callables = {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef) or (
                               isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and not n.decorator_list)} | {
            t.id for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Lambda)
            for t in n.targets if isinstance(t, ast.Name)}
        self.scopes: dict[ast.AST, tuple[frozenset[str], frozenset[str]]] = {}
        # Class attributes that name a path (`Lin = nn.Linear` in a class body), reached as `self.Lin` / `C.Lin`:
        # without them a class attribute hid a module or a torch class from every path rule (scan review,
        # session 11: `tm = torch` then `self.tm.allclose = f`, `self.tm.load`). path() reads the map while
        # it fills, so a class attribute may name an earlier one (`B = C.Lin`).
        self.answer_classes = frozenset(n.name for n in self.class_binds)
        self.class_aliases: dict[str, str] = {}
        for n in nodes:
            if isinstance(n, ast.ClassDef):
                for stmt in n.body:
                    target = (stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1
                              else stmt.target if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else None)
                    if isinstance(target, ast.Name):
                        value = self.path(stmt.value)
                        if value is not None:
                            self.class_aliases[target.id] = value
        self.class_names = self._class_valued_names(nodes)
        self.type_names = self._class_valued_names(nodes, only_type=True)
        self._find_kernels(tree, nodes)

    def _class_valued_names(self, nodes: list[ast.AST], only_type: bool = False) -> frozenset[tuple[int, str]]:
        """(scope, name) of names that hold a class the answer did not write: `T = type(x)` (also chained,
        tuple, annotated and walrus bindings), `C: type = nn.Linear`, a loop variable over classes named by
        path (`for cls in (nn.Linear,)`). Storing attributes on them patches torch (`type(x).add = f`), and a
        `type(...)` called with three arguments builds classes (scan reviews, session 11). With `only_type`,
        only bindings of `type(...)`. Scoped: a loop over dtypes in a self-test names nothing in `forward`."""
        def classy(value: ast.AST | None) -> bool:
            if value is None:
                return False
            value = _unwrapped(value)
            if isinstance(value, ast.IfExp):
                return classy(value.body) or classy(value.orelse)
            if isinstance(value, ast.BoolOp):
                return any(classy(v) for v in value.values)
            return _type_call(value) or (not only_type and self.path(value) is not None
                                         and isinstance(_lookup(self.path(value))[1], type))

        found: set[tuple[int, str]] = set()
        for node in nodes:
            pairs: list[tuple[ast.AST, ast.AST | None]] = []
            if isinstance(node, ast.Assign):
                pairs = [(t, node.value) for t in node.targets]
            elif isinstance(node, ast.AnnAssign):
                pairs = [(node.target, node.value)]
            elif isinstance(node, ast.NamedExpr):
                pairs = [(node.target, node.value)]
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and isinstance(node.target, ast.Name):
                items = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) else []
                if items and all(_type_call(e) if only_type else (_type_call(e) or self.path(e) is not None)
                                 for e in items):
                    found.add((self._scope_id(node.target), node.target.id))
            for target, value in pairs:
                if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)):
                    pairs.extend(zip(target.elts, value.elts))
                elif isinstance(target, ast.Name) and classy(value):
                    found.add((self._scope_id(target), target.id))
        return frozenset(found)

    def _scope_id(self, node: ast.AST) -> int:
        cur = self.parents.get(node)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            cur = self.parents.get(cur)
        return id(cur) if cur is not None else 0

    def _class_valued(self, node: ast.expr) -> bool:
        """Whether storing an attribute on `node` (or on what it leads to) stores on a class the answer did
        not write."""
        node = _unwrapped(node)
        if isinstance(node, ast.IfExp):
            return self._class_valued(node.body) or self._class_valued(node.orelse)
        if isinstance(node, ast.BoolOp):
            return any(self._class_valued(v) for v in node.values)
        path = self.path(node)
        if path is not None and isinstance(_lookup(path)[1], type):
            return True  # `(C := nn.Linear).forward = f`
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            return self._class_valued(node.value)
        return _type_call(node) or isinstance(node, ast.Name) and (self._scope_id(node), node.id) in self.class_names

    def ban(self, node: ast.AST, what: str, why: str) -> None:
        self.violations.append(f"line {getattr(node, 'lineno', 0)}: {what} is not allowed: {why}")

    # -- definitions ------------------------------------------------------------------------------
    def _find_kernels(self, tree: ast.Module, nodes: list[ast.AST]) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if any(self._decorator_path(d) in _KERNEL_DECORATORS for d in node.decorator_list):
                    self.kernels[node.name] = node.lineno
            elif isinstance(node, ast.Call) and self.path(node.func) in _KERNEL_DECORATORS | {None}:
                target = _jit_target(node, self.path)
                if target:
                    self.kernels.setdefault(target, node.lineno)
        for stmt in _top_level(tree.body):
            if isinstance(stmt, ast.ClassDef) and stmt.name == "ModelNew":
                self.has_model_new = True

    def _decorator_path(self, dec: ast.expr) -> str | None:
        return self.path(dec.func if isinstance(dec, ast.Call) else dec)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if _dunder(node.name):
            in_class = isinstance(self.parents.get(node), ast.ClassDef)
            if not in_class or node.name not in _DEFINABLE_DUNDERS:
                self.ban(node, f"defining '{node.name}'", "it hooks the interpreter or torch; classes may define "
                         f"{', '.join(sorted(_DEFINABLE_DUNDERS - _DUNDER_NAMES))}")
        for dec in node.decorator_list:
            self.visit(dec)
        self.visit(node.args)
        if node.returns:
            self.visit(node.returns)
        outer, self.in_kernel = self.in_kernel, self.in_kernel or node.name in self.kernels
        outer_names = self.kernel_names
        if self.in_kernel and not outer:
            self._kernel_text(node)
            enclosing = set()
            cur = self.parents.get(node)
            while cur is not None:
                if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                    enclosing |= _bound_names(list(ast.walk(cur)))
                cur = self.parents.get(cur)
            self.kernel_names = self.module_names | _bound_names(list(ast.walk(node))) | enclosing
        for stmt in node.body:
            self.visit(stmt)
        self.in_kernel, self.kernel_names = outer, outer_names

    def _kernel_text(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        """A kernel's `def` line reads `def <name>(`, and no other line of it or its decorators starts with `def `:
        Triton finds a kernel's source by such lines, and the interpreter once ran a `def` written in the kernel's
        docstring instead of its body (red-team round s25)."""
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        end = node.end_lineno or node.lineno
        text = self.lines[first - 1:end]
        def_at = node.lineno - first
        if not text or def_at >= len(text):
            return
        if not re.match(rf"\s*def {re.escape(node.name)}\(", text[def_at]):
            self.ban(node, f"the kernel '{node.name}' spelled other than `def {node.name}(` on its first line",
                     "Triton finds a kernel's source by that line")
        if any(line.strip().startswith("def ") for i, line in enumerate(text) if i != def_at):
            self.ban(node, f"a second line starting with `def ` in the kernel '{node.name}' (in a string?)",
                     "Triton's interpreter could take the kernel's source from there")

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if node.name == "Model" and isinstance(self.parents.get(node), ast.Module):
            self.ban(node, "a class named 'Model'", "that is the reference; leave it out and define only ModelNew "
                     "and what it uses")
        for kw in node.keywords:
            self.ban(node, f"the class keyword '{kw.arg}='", "a metaclass changes how the class is built; derive "
                     "from nn.Module or a plain class")
        if any(self.path(b) in _CLASS_FACTORIES for b in node.bases) and not _enum_members(node):
            # Enum's functional API works on any Enum without members, the answer's own too (`class E(Enum):
            # pass`, then `E("X", names)` builds a class with whatever names; scan review after round v4k)
            self.ban(node, f"the Enum '{node.name}' without members", "an Enum without members can be extended "
                     "from names given as data; give it its members in the class statement")
        for stmt in node.body:  # a dataclass field `numpy` on a Tensor subclass hands out the bound method
            targets = [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Name) and t.id in _MEMORY_ATTRIBUTES:
                    self.ban(t, f"the class attribute '{t.id}'", f"the name is that of an attribute that "
                             f"{_BANNED_ATTRIBUTES[t.id]}")
        self.generic_visit(node)

    # -- imports ----------------------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            if not module_allowed(a.name):
                self.ban(node, f"import of '{a.name}'", f"{_module_reason(a.name)}{_ALLOWED_IMPORTS}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            self.ban(node, "a relative import", "an answer is a single module")
            return
        if module in _PRIVATE_FROM_IMPORTS:
            for a in node.names:
                if a.name not in _PRIVATE_FROM_IMPORTS[module]:
                    self.ban(node, f"'from {module} import {a.name}'", f"of the private module {module} an answer may "
                             f"import only {', '.join(sorted(_PRIVATE_FROM_IMPORTS[module]))}")
            return
        if not module_allowed(module):
            self.ban(node, f"import from '{module}'", f"{_module_reason(module)}{_ALLOWED_IMPORTS}")
            return
        for a in node.names:
            if a.name == "*":
                self.ban(node, f"'from {module} import *'", "import the names you use")
                continue
            kind, what = _lookup(f"{module}.{a.name}")
            if kind == "banned" or _dunder(a.name) and module != "__future__":
                self.ban(node, f"'from {module} import {a.name}'", f"{what if kind == 'banned' else a.name} "
                         "is outside the answer contract")

    # -- names --------------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        parent = self.parents.get(node)
        if ((self._scope_id(node), name) in self.type_names and isinstance(node.ctx, ast.Load)
                and isinstance(parent, ast.Call) and parent.func is node and _several_arguments(parent)):
            self.ban(node, f"calling '{name}' (a type(...)) with more than one argument",
                     "type(int)('C', (), {...}) builds a class at run time; write a class statement")
        if _dunder(name):
            if name not in _DUNDER_NAMES or (isinstance(node.ctx, (ast.Store, ast.Del)) and name not in (
                    "__all__", "__doc__", "__version__", "__slots__")):
                self.ban(node, f"the name '{name}'", "dunder names reach the interpreter; only __name__ is needed "
                         "(the main guard)")
            return
        if isinstance(node.ctx, ast.Load):
            if (self.kernel_names is not None and name not in self.kernel_names and name in self.bound
                    and name not in _BUILTIN_NAMES):
                # Bound somewhere else (a parameter of another function) but not where the kernel reads it: at run
                # time the name comes from the kernel's module or the interpreter's scope (red-team round s25).
                self.ban(node, f"the name '{name}' in a kernel", "the kernel does not bind it, nor does its module "
                         "or an enclosing function: bind it at module level or in the kernel")
            elif name not in self.bound and name not in _BUILTIN_NAMES:
                self.ban(node, f"the undefined name '{name}'", "the answer never binds it (the CPU interpreter "
                         "leaks names such as np into a module; a GPU run would not have them)")
            elif name in _BANNED_BUILTINS and not self._local(node):
                self.ban(node, f"the builtin '{name}'", f"it {_BANNED_BUILTINS[name]}")
            elif name in (*_NAME_BUILTINS, "type") and not self._local(node):
                self._name_builtin(node)
        self._module_value(node)
        self._restricted(node)
        self._kernel_torch(node)
        self._kernel_oracle(node)

    def _name_builtin(self, node: ast.Name) -> None:
        parent = self.parents.get(node)
        if not (isinstance(parent, ast.Call) and parent.func is node):
            if node.id == "type" and id(node) in self.annotations:
                return
            self.ban(node, f"'{node.id}' used as a value", "call it directly")
            return
        args = parent.args
        if node.id == "type":
            if _several_arguments(parent) or len(args) != 1:
                self.ban(node, "type() with more than one argument", "it builds classes at run time; write a class")
                return
            grand = self.parents.get(parent)
            if isinstance(grand, ast.Call) and grand.func is parent and _several_arguments(grand):
                self.ban(node, "calling type(x) with more than one argument", "type(int)('C', (), {...}) builds a "
                         "class at run time; write a class")
            elif self._names_class(args[0]):
                self.ban(node, f"type() of the class '{ast.unparse(args[0])[:40]}'", "that is its metaclass, which "
                         "builds classes from names given as data; use the class itself")
            elif isinstance(grand, (ast.Return, ast.Yield, ast.List, ast.Tuple, ast.Set, ast.Starred, ast.Lambda,
                                    ast.ListComp, ast.SetComp, ast.GeneratorExp)) or (
                    isinstance(grand, ast.Dict) and any(v is parent for v in grand.values)) or (
                    isinstance(grand, ast.DictComp) and grand.value is parent) or (
                    isinstance(grand, ast.Call) and grand.func is not parent and not (
                        isinstance(grand.func, ast.Name) and grand.func.id in _TYPE_CONSUMERS) and not (
                        # a dispatch table's lookup (`H.get(type(x), 0)`), unless the answer defines such a method
                        isinstance(grand.func, ast.Attribute) and grand.func.attr in ("get", "setdefault", "pop", "format")
                        and self.path(grand.func) is None and grand.func.attr not in self.own_attributes)):
                # handed on where no rule follows it (`[type(int)][0](...)`, `functools.partial(type(x), ...)`,
                # a helper returning it): a class store or a 3-argument call would go unseen (scan review)
                self.ban(node, "type(...) handed on as a value", "use it where you read it (type(x).__name__, "
                         "isinstance, a comparison, a dict key)")
            return
        if node.id == "getattr" and _device_module_idiom(parent, self.path, self.parents):
            return
        literal = (len(args) >= 2 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str)
                   and not any(isinstance(a, ast.Starred) for a in args[:2]))
        if not literal:
            self.ban(node, f"{node.id}() with a computed attribute name", "write the attribute (x.name) or pass "
                     "a literal string")
            return
        name = args[1].value
        why = self._attribute_reason(name, args[0]) or (
            f"it hands out the method '{name}' (torch.compile, a typed storage)"
            if name in _CALL_BANNED and node.id == "getattr" else "")
        if why:
            self.ban(node, f"{node.id}(..., '{name}')", why)
        elif node.id in ("setattr", "delattr") and (self._rooted_at_module(args[0]) or self._class_valued(args[0])):
            self.ban(node, f"{node.id}() on '{ast.unparse(args[0])[:40]}'", _MONKEYPATCH)
        elif node.id == "getattr":
            kind, what = self._resolve(args[0], name)
            if kind == "banned":
                self.ban(node, f"getattr(..., '{name}')", f"it reaches {what}")
            elif kind == "module":
                self.ban(node, f"getattr(..., '{name}')", "it hands out a module; write the attribute path")

    def _local(self, node: ast.Name) -> bool:
        """Bound as a parameter or local of an enclosing function (module-level bindings may not run,
        so there the builtin shows through)."""
        prev, cur = node, self.parents.get(node)
        while cur is not None:
            if (isinstance(cur, ast.ClassDef) and any(prev is b for b in cur.body)
                    and node.id in self.class_binds[cur]):
                # A name a class body binds is read there from the class namespace, then the module, then
                # builtins: never from the enclosing function (`exec = None` in f, then `class C: e = exec;
                # exec = 1` hands out the builtin; scan review, session 11).
                return False
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                # Defaults, annotations and decorators run in the enclosing scope (`def f(exec=exec)` reads
                # the builtin); only the body sees the function's own names (review of round v4k).
                inside = prev is cur.body if isinstance(cur, ast.Lambda) else any(prev is b for b in cur.body)
                if inside:
                    own, declared_global = self._function_scope(cur)
                    if node.id in own:
                        return True
                    if node.id in declared_global:
                        return False
            prev, cur = cur, self.parents.get(cur)
        return False

    # -- attributes ---------------------------------------------------------------------------------
    def visit_Attribute(self, node: ast.Attribute) -> None:
        parent = self.parents.get(node)
        if node.attr in ("format", "format_map") and not self._formats_one_constant(node):
            # Replacement fields read attributes by name ("{0.__traceback__.tb_frame}"), which `visit_Constant`
            # checks per constant: a format string built at run time ("{0.__traceback__.tb_fr" + "ame}") is
            # checked nowhere (red-team round s23), nor one whose bound method was read first and called later
            # (s24). Only a call of `.format` on one string constant is allowed.
            self.ban(node, f"'.{node.attr}' other than called on one string constant",
                     "format fields read attributes by name; format one string constant, or use an f-string")
        if (isinstance(node.value, ast.Name) and node.value.id in self.answer_classes and isinstance(node.ctx, ast.Load)
                and node.attr in self._methods_on_foreign_names(node.value.id)
                and not (isinstance(parent, ast.Call) and parent.func is node and parent.args
                         and isinstance(parent.args[0], ast.Name) and parent.args[0].id == "self")):
            # A method that reads `self._typed_storage` is the answer's own only while `self` is its instance:
            # called through the class with another object it reads torch's (scan review, session 11).
            self.ban(node, f"'{node.value.id}.{node.attr}' other than as a method call on self", "the method uses "
                     "private names torch or triton objects also have; call it on an instance")
        if (node.attr == "__class__" and isinstance(node.ctx, ast.Load) and isinstance(parent, ast.Attribute)
                and parent.value is node and parent.attr in ("__name__", "__qualname__")
                and isinstance(parent.ctx, ast.Load)):
            self.generic_visit(node)  # `self.__class__.__name__` (extra_repr) is a string, nothing more
            return
        why = self._attribute_reason(node.attr, node.value)
        if why:
            self.ban(node, f"'.{node.attr}'", why)
        elif not (isinstance(self.parents.get(node), ast.Attribute) and self.parents[node].value is node):
            path = self.path(node)
            if path is not None:
                kind, what = _lookup(path)
                if kind == "banned":
                    self.ban(node, f"'{ast.unparse(node)[:60]}'", f"it reaches {what}, outside the answer contract")
        if isinstance(node.ctx, (ast.Store, ast.Del)) and self._class_valued(node.value):
            self.ban(node, f"assigning '{ast.unparse(node)[:60]}'", "it changes a class the answer did not write "
                     "(type(x), or a loop over classes): monkeypatching; keep your settings in your own objects")
        elif isinstance(node.ctx, (ast.Store, ast.Del)) and self._rooted_at_module(node.value):
            path = self.path(node) or ""
            if not path.startswith("torch.backends."):
                self.ban(node, f"assigning '{ast.unparse(node)[:60]}'", _MONKEYPATCH)
        self._module_value(node)
        self._restricted(node)
        self._kernel_torch(node)
        self._kernel_oracle(node)
        self._kernel_value_attribute(node, node.attr)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        # `d["__builtins__"]`, `d["__import__"]`: a namespace dict reached by a route no rule foresaw (red-team
        # round s20) yields the interpreter through a subscript that names no attribute. No honest answer
        # indexes anything by a dunder name.
        key = _unwrapped(node.slice)
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and _dunder(key.value):
            self.ban(node, f"the subscript [{key.value!r}]", "dunder keys index namespaces (module globals, "
                     "builtins), outside the answer contract")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        # str.format and format_map read attributes named in the text: "{0.gi_frame.f_back.f_locals}".format(g)
        # is an attribute read no ast.Attribute shows (scan review after round v4k). Each attribute a
        # replacement field names goes through the attribute rules.
        if not (isinstance(node.value, str) and "{" in node.value):
            return
        for attr in _format_field_attributes(node.value):
            why = self._attribute_reason(attr, node)
            if why:
                self.ban(node, f"the format field attribute '.{attr}'", why)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if (self.in_kernel and isinstance(func, ast.Name) and func.id in self.host_callables
                and func.id not in self.kernels and not self._local(func)):
            # A GPU kernel cannot call Python; the interpreter runs the call as host code in every program, while
            # a launch runs (red-team round s29: a host function resized a launch's tensor, a use-after-free).
            self.ban(node, f"calling the Python function or class '{func.id}' inside a kernel",
                     "kernels call only @triton.jit functions, tl.* and libdevice")
        if (isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault") and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)
                and _dunder(node.args[0].value)):
            self.ban(node, f"'.{func.attr}({node.args[0].value!r})'", "dunder keys index namespaces (module "
                     "globals, builtins), outside the answer contract")
        if isinstance(func, ast.Attribute) and not self._own_method(func):
            # `.compile` and `.storage` are banned attributes: read, not only called (red-team round s21)
            if func.attr == "type" and not all(self._type_argument_safe(a)
                                               for a in [*node.args, *(k.value for k in node.keywords)]):
                # A storage's or tensor's `.type(name)` imports the module the name says; a name held in a
                # variable passed the literal check (red-team round s23: `torch.UntypedStorage(n).type(v)`).
                self.ban(node, "'.type(...)' with anything but a dtype or a tensor type name",
                         "it imports the module a string names; use .to(dtype)")
        if self.in_kernel:
            self._kernel_introspection(node)
        self.generic_visit(node)

    def _formats_one_constant(self, node: ast.Attribute) -> bool:
        """`"...".format(...)`, `str.format("...", ...)`, or the answer's own `format` method called."""
        call = self.parents.get(node)
        if not (isinstance(call, ast.Call) and call.func is node):
            return False
        text = node.value
        if isinstance(text, ast.Name) and text.id == "str" and not self._local(text) and call.args:
            text = call.args[0]
        return (isinstance(text, ast.Constant) and isinstance(text.value, str)) or (
            node.attr == "format" and self._own_method(node))

    def _type_argument_safe(self, arg: ast.expr) -> bool:
        """An argument of `.type(...)` that names no module: a literal tensor type name, a dtype reached by an
        allowed path (`torch.float16`), or none (`.type()` reads the type)."""
        if isinstance(arg, ast.Constant):
            return arg.value is None or isinstance(arg.value, str) and bool(_TENSOR_TYPE_NAME.fullmatch(arg.value))
        path = self.path(arg)  # (no `x.dtype`: any object may hold a string there, red-team round s24)
        if path is None:
            return False
        import torch

        return isinstance(_lookup(path)[1], torch.dtype)

    def _own_method(self, func: ast.Attribute) -> bool:
        """`self.m(...)` where the answer's own class defines or sets `m`, or `Mine(...).m(...)` where the
        answer's class `Mine` defines `m`."""
        base = func.value
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id in self.answer_classes:
            return any(n.name == base.func.id and func.attr in binds for n, binds in self.class_binds.items())
        return self._own_instance(base) and func.attr in self.own_attributes

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        # `case C(name=v)` binds getattr(subject, "name"): an attribute read the rules above never see as
        # an ast.Attribute (red-team v4k review: `case object(__globals__=g)` emptied the whole scan).
        for attr in node.kwd_attrs:
            why = self._attribute_reason(attr, node.cls) or (
                f"it hands out the method '{attr}' (torch.compile, a typed storage)" if attr in _CALL_BANNED else "")
            if why:
                self.ban(node, f"the match pattern keyword '{attr}='", why)
        self.generic_visit(node)

    def _attribute_reason(self, attr: str, base: ast.expr) -> str:
        if _dunder(attr) and attr not in _DUNDER_ATTRIBUTES:
            return f"dunder attributes reach the interpreter; only {', '.join(sorted(_DUNDER_ATTRIBUTES))}"
        if attr in _FRAME_ATTRIBUTES:
            return "frames and code objects are introspection"
        if attr in _BANNED_ATTRIBUTES:
            return f"it {_BANNED_ATTRIBUTES[attr]}"
        if (attr.startswith("_") and not _dunder(attr) and attr not in _PRIVATE_ALLOWED
                and (attr not in self.own_attributes
                     or (attr in foreign_private_names()
                         and not (self._own_instance(base, attr) and self._trusted_bases(base))))
                and self.path(base) is None):  # (module paths: `_lookup`)
            # torch's and triton's private instance attributes (`t._typed_storage()`, a storage's
            # `_write_file`, `_new_shared_fd_cpu`) reach raw memory and file descriptors (review of round v4k).
            # The answer's own `_x` is fine; where torch, triton or typing objects have one of that name too,
            # only on `self`/`cls` in the answer's methods: a dummy `def _typed_storage` anywhere made
            # `t._typed_storage()` the answer's own (scan reviews, session 11).
            return "private attributes of torch, triton and library objects are outside the contract" + (
                f" (torch, triton or standard library objects have a '{attr}': name yours otherwise)"
                if attr in self.own_attributes else "")
        path = self.path(base)
        if (attr in module_holder_names() and attr not in _BUILTIN_TYPE_ATTRIBUTES
                and (path is None or _lookup(path)[0] != "module")):  # `d.copy()` is a dict's, not `copy`
            return f"'{attr}' names a module outside the contract in some allowed module"
        return ""

    @functools.cache  # noqa: B019 - one scanner per answer
    def _methods_on_foreign_names(self, class_name: str) -> frozenset[str]:
        """Instance methods of the answer's class `class_name` that read a private name torch, triton or
        typing objects also have on `self`."""
        found = set()
        for cls in (n for n in self.parents if isinstance(n, ast.ClassDef) and n.name == class_name):
            for fn in cls.body:
                if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or any(
                        isinstance(d, ast.Name) and d.id in ("staticmethod", "classmethod") for d in fn.decorator_list):
                    continue
                if any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self"
                       and n.attr in foreign_private_names() for n in ast.walk(fn)):
                    found.add(fn.name)
        return frozenset(found)

    def _decorates(self, node: ast.expr) -> bool:
        """`node` is (the callee of) an entry of a def's or class's decorator list."""
        parent = self.parents.get(node)
        item = parent if isinstance(parent, ast.Call) and parent.func is node else node
        owner = self.parents.get(item)
        return isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and any(
            d is item for d in owner.decorator_list)

    def _names_class(self, node: ast.expr) -> bool:
        """An expression that names a class: a builtin class, one the answer writes, a `type(...)`, a name
        holding one, or a path to one (`nn.Linear`); `cls` of a classmethod."""
        node = _unwrapped(node)
        if _type_call(node) or isinstance(node, ast.Name) and (
                node.id in self.answer_classes or node.id == "cls"
                or (self._scope_id(node), node.id) in self.class_names
                or (node.id in _BUILTIN_NAMES and isinstance(getattr(builtins, node.id, None), type)
                    and not self._local(node) and node.id not in self.aliases)):
            return True
        path = self.path(node)
        return path is not None and isinstance(_lookup(path)[1], type)

    def _trusted_bases(self, base: ast.expr) -> bool:
        """`self` of a class built only on the answer's classes, `object`, `nn.Module`s or autograd Functions:
        in a subclass of a library class (`warnings.catch_warnings`) the base's `__init__` fills private names
        the answer's class body only shadows (red-team round s24: `self._module` was the warnings module)."""
        import torch

        cur = self.parents.get(base)
        while cur is not None and not isinstance(cur, ast.ClassDef):
            cur = self.parents.get(cur)
        if cur is None:
            return True  # `cls`/the class itself: `_own_instance` decided by the class body
        for b in cur.bases:
            if isinstance(b, ast.Name) and (b.id in self.answer_classes or b.id == "object"):
                continue
            path = self.path(b)
            cls = _lookup(path)[1] if path is not None else None
            if not (isinstance(cls, type) and issubclass(cls, (torch.nn.Module, torch.autograd.Function))):
                return False
        return True

    def _own_instance(self, base: ast.expr, attr: str = "") -> bool:
        """`self` / `cls` as the first parameter, never rebound, of a method of a class the answer writes; or
        the answer's class itself for a name its own body binds (`A._reset_parameters(self)`)."""
        if isinstance(base, ast.Name) and base.id in self.answer_classes and attr:
            return any(n.name == base.id and attr in binds for n, binds in self.class_binds.items())
        if not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
            return False
        cur = self.parents.get(base)
        while cur is not None and not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            cur = self.parents.get(cur)
        if not isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)) or not isinstance(self.parents.get(cur),
                                                                                        ast.ClassDef):
            return False
        params = [*cur.args.posonlyargs, *cur.args.args]
        if not params or params[0].arg != base.id:
            return False
        return not any(isinstance(n, ast.Name) and n.id == base.id and not isinstance(n.ctx, ast.Load)
                       for n in ast.walk(cur))

    def _resolve(self, base: ast.expr, attr: str) -> tuple[str, object]:
        path = self.path(base)
        return _lookup(f"{path}.{attr}") if path is not None else ("unknown", None)

    def _rooted_at_module(self, node: ast.expr) -> bool:
        chain = node
        while isinstance(chain, ast.Subscript):
            chain = chain.value
        if isinstance(chain, ast.Attribute) and self.path(chain) is not None:
            return True  # `self.Lin` where the class body holds `Lin = nn.Linear`
        while isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        return isinstance(node, ast.Name) and node.id in self.aliases

    def _module_value(self, node: ast.Name | ast.Attribute) -> None:
        """A module (or the Triton driver) only as the base of an attribute or as an alias."""
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node or not isinstance(node.ctx, ast.Load):
            return
        if (isinstance(parent, ast.Call) and parent.args and parent.args[0] is node
                and isinstance(parent.func, ast.Name) and parent.func.id in (*_NAME_BUILTINS, *_BANNED_BUILTINS)):
            return  # getattr(torch, ...) is judged as the attribute it names; vars(torch) as vars
        if (isinstance(parent, ast.Assign) and len(parent.targets) == 1 and isinstance(parent.targets[0], ast.Name)
                and not isinstance(self.parents.get(parent), ast.ClassDef)):
            return  # an alias; as a class attribute a module would be reachable as `self.m` (refused below)
        path = self.path(node)
        if path is None:
            return
        kind, _ = _lookup(path)
        # torch.distributed(.tensor) resolve as "unknown" on purpose (only the way to `_EXTRA_PATHS`), so as a
        # value they would leave the scan's sight (`[torch.distributed][0].distributed_c10d...`: round s21)
        if (kind == "module" or path in ("torch.distributed", "torch.distributed.tensor")
                or (path in _DRIVER_PATHS and path not in _DRIVER_LEAVES)):
            self.ban(node, f"the module '{ast.unparse(node)[:40]}' used as a value", "name its attributes "
                     "(tl.load) or alias it (F = torch.nn.functional)")

    def _restricted(self, node: ast.Name | ast.Attribute) -> None:
        """Allowed callables that read or write attributes named by data (review of round v4k)."""
        if not isinstance(node.ctx, ast.Load):
            return
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return  # judged as the longer path
        path = self.path(node)
        if path in _CLASS_DECORATORS and not self._decorates(node):
            # called as a function they rewrite an existing class in place: `dataclasses.dataclass(frozen=True)
            # (nn.Linear)` makes every nn.Linear frozen (scan review, session 11)
            self.ban(node, f"{path} other than as a decorator", "on a class the answer did not write it rewrites "
                     "that class; write @" + path.rsplit(".", 1)[1] + " over your own class statement")
        if path == "functools.wraps":
            call = parent if isinstance(parent, ast.Call) and parent.func is node else None
            owner = self.parents.get(call) if call is not None else None
            if not (call is not None and len(call.args) == 1 and not call.keywords
                    and not isinstance(call.args[0], ast.Starred)
                    and isinstance(owner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                    and any(d is call for d in owner.decorator_list)):
                self.ban(node, "functools.wraps other than @functools.wraps(f)", "its assigned=/updated= read "
                         "and write attributes named by strings, dunders included")
        elif path in _CLASS_FACTORIES and isinstance(parent, ast.Call) and parent.func is node and (
                len(parent.args) > 1 or parent.keywords):
            self.ban(node, f"the functional API of {path}", "it builds a class from names given as data; "
                     "write a class statement")

    def _kernel_torch(self, node: ast.Name | ast.Attribute) -> None:
        if (self.in_kernel and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                and (self.path(node) or "").split(".")[0] == "torch"):
            self.ban(node, f"'{node.id}' inside a @triton.jit kernel", "torch compiles only under the CPU "
                     "interpreter; use triton.language (tl.float32, tl.exp, ...)")

    # -- what a kernel may test (red-team round s28) ---------------------------------------------------------------
    # The GPU code generator folds a compile-time condition over its objects, the interpreter over its own: the check
    # compiles one branch and the CPU runs the other when a kernel compares or introspects a Triton function, class
    # or module (`tl.range is tl.static_range`, `hasattr(tl.multiple_of, "func")`) or an interpreter object
    # (`hasattr(x_ptr.handle, "data")`). The replay refuses the same (`kernel_source.kernel_problems`).
    def _kernel_oracle(self, node: ast.Name | ast.Attribute) -> None:
        from kernelgym.judge.kernel_source import branch_oracle, oracle_use

        if not self.in_kernel or not isinstance(node.ctx, ast.Load) or id(node) in self.annotations:
            return
        parent = self.parents.get(node)
        if isinstance(parent, ast.Attribute) and parent.value is node:
            return  # a step of a longer path: judged at its end
        path = self.path(node)
        if isinstance(node, ast.Name) and node.id in self.kernels and path is None and not self._local(node):
            pass  # a kernel function: an InterpretedFunction under the interpreter, a JITFunction in the code generator
        elif path is None or path.split(".")[0] != "triton":
            return
        else:
            kind, obj = _lookup(path)
            if kind == "banned" or (kind == "object" and not branch_oracle(obj)):
                return
        if oracle_use(node, self.parents, self._triton_function):
            self.ban(node, f"'{ast.unparse(node)[:60]}' as a value inside a kernel (compared, tested with hasattr/"
                     "isinstance, bound to a name or passed to a helper)", "the GPU compiler and the CPU interpreter "
                     "hold different objects there, so the CPU would run a branch the GPU check never compiled; "
                     "call Triton functions, and test only constexpr values and dtypes")

    def _triton_function(self, func: ast.AST) -> bool:
        """A Triton function (not a class such as `tl.constexpr`, whose instance would carry its argument on)."""
        path = self.path(func) or ""
        if path.split(".")[0] != "triton":
            return False
        kind, obj = _lookup(path)
        return kind == "object" and not inspect.isclass(obj)

    def _kernel_value_attribute(self, node: ast.AST, attr: str) -> None:
        from kernelgym.judge.kernel_source import _NOT_VALUE_ATTRIBUTES

        if self.in_kernel and attr in _NOT_VALUE_ATTRIBUTES:
            self.ban(node, f"'.{attr}' inside a kernel", "it reads the CPU interpreter's objects (`.handle` is its "
                     "numpy buffer of addresses), which a GPU kernel does not have; use Triton language")

    def _kernel_introspection(self, node: ast.Call) -> None:
        from kernelgym.judge.kernel_source import introspected_attribute

        func = node.func
        if not (isinstance(func, ast.Name) and func.id in ("hasattr", "getattr") and not self._local(func)):
            pass
        elif len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            self._kernel_value_attribute(node, node.args[1].value)
        else:
            self.ban(node, f"{func.id}() with a computed name inside a kernel", "give the attribute literally")
        if introspected_attribute(node) and not self._local(func) and self.path(node.args[0]) is None:
            self.ban(node, f"{func.id}() of an attribute inside a kernel ({ast.unparse(node.args[0])[:40]})",
                     "the GPU compiler and the CPU interpreter hold different objects there")

    def path(self, node: ast.expr) -> str | None:
        """The dotted path an expression names through the answer's imports and aliases, if any."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if (isinstance(node, ast.Name) and parts and parts[-1] in self.class_aliases
                and (node.id in ("self", "cls") or node.id in self.answer_classes)):
            return ".".join([self.class_aliases[parts[-1]], *reversed(parts[:-1])])
        if not isinstance(node, ast.Name) or node.id not in self.aliases or self._shadowed(node):
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def _shadowed(self, node: ast.Name) -> bool:
        """A parameter or plain local of an enclosing function that shares an import alias's name (a kernel
        parameter `F` beside `import torch.nn.functional as F`, Liger-Kernel's parameter `operator`, that local
        read in a nested lambda): not the module. A local that its function binds to a module path or imports
        stays the alias; a class body that binds the name reads the module's (`torch = 0` in f does not hide
        `torch` in `class C: l = torch.load; torch = 1`)."""
        prev, cur = node, self.parents.get(node)
        in_function = False
        while cur is not None:
            if isinstance(cur, ast.ClassDef) and not in_function and any(prev is b for b in cur.body) \
                    and node.id in self.class_binds[cur]:
                return False
            if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                inside = prev is cur.body if isinstance(cur, ast.Lambda) else any(prev is b for b in cur.body)
                if inside:
                    in_function = True
                    if isinstance(cur, ast.Lambda):
                        if node.id in {a.arg for a in [*cur.args.posonlyargs, *cur.args.args, *cur.args.kwonlyargs]}:
                            return True
                    else:
                        own, declared_global = self._function_scope(cur)
                        if node.id in self.module_bound.get(cur, ()) or node.id in declared_global:
                            return False  # (a declared global is the module's name)
                        if node.id in own:
                            return True
            prev, cur = cur, self.parents.get(cur)
        return False

    def _function_scope(self, fn: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
        """(names `fn` binds in its own scope, names it declares global), computed once per function."""
        if fn not in self.scopes:
            self.scopes[fn] = _function_names(fn)
        return self.scopes[fn]

    def _module_bound(self, nodes: list[ast.AST]) -> dict[ast.AST, frozenset[str]]:
        """For each function, the names it or a scope inside it imports or assigns a value rooted at an
        alias (`F = torch.nn.functional`, `dt = tl.float32`): such a local keeps the alias's meaning. One
        pass over the answer rather than a walk per function, which walked nested functions again."""
        found: dict[ast.AST, set[str]] = {}
        for n in nodes:
            names: list[str] = []
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                names = [(a.asname or a.name).split(".")[0] for a in n.names]
            elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.NamedExpr)):
                value = n.value
                while isinstance(value, (ast.Attribute, ast.Subscript)):
                    value = value.value
                if isinstance(value, ast.Name) and value.id in self.aliases:
                    targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                    names = [t.id for tg in targets for t in ast.walk(tg) if isinstance(t, ast.Name)]
            if names:
                cur = self.parents.get(n)
                while cur is not None:
                    if isinstance(cur, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        found.setdefault(cur, set()).update(names)
                    cur = self.parents.get(cur)
        return {fn: frozenset(names) for fn, names in found.items()}


_ALLOWED_IMPORTS = ("; allowed: torch (nn, nn.functional, nn.init, cuda, backends, autograd, amp, linalg, fft, "
                    "special, testing), triton (language, language.extra.*, runtime.driver, "
                    "tools.tensor_descriptor), math, typing, dataclasses, functools, itertools, operator, numbers, "
                    "enum, collections, abc, warnings")
_MONKEYPATCH = ("it changes a module shared with the judge (monkeypatching); keep your settings in your own "
                "objects (torch.backends flags may be set, with no effect on the judge)")


def _module_reason(name: str) -> str:
    root = name.split(".")[0]
    if root in ("torch", "triton"):
        return f"{name} is not needed by kernels or their launchers (private, compiles code, or reaches files)"
    return f"{name} reaches the process, the OS or the interpreter, or is not needed by kernels"


def _aliases(nodes: list[ast.AST]) -> dict[str, str]:
    """Names bound to a module path: imports anywhere, and `name = <path>` assignments whose value names one."""
    aliases: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                if module_allowed(a.name):
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module and module_allowed(node.module):
            for a in node.names:
                if a.name != "*":
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    assigns = [n for n in nodes if isinstance(n, ast.Assign)]
    for _ in range(3):  # aliases of aliases
        for node in assigns:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                base, parts = node.value, []
                while isinstance(base, ast.Attribute):
                    parts.append(base.attr)
                    base = base.value
                if isinstance(base, ast.Name) and base.id in aliases and node.targets[0].id not in aliases:
                    aliases[node.targets[0].id] = ".".join([aliases[base.id], *reversed(parts)])
    return aliases


def _device_module_idiom(call: ast.Call, path, parents: dict) -> bool:  # noqa: ANN001
    """Liger-Kernel's `device = torch.device(device)` then `getattr(torch, device.type, None)`: the name is a
    real device type (cuda, cpu, xpu, ...) when `device` is assigned only by a top-level statement of the same
    function, before the call, from torch.device(...)."""
    args = call.args
    if not (len(args) >= 2 and path(args[0]) == "torch" and isinstance(args[1], ast.Attribute)
            and args[1].attr == "type" and isinstance(args[1].value, ast.Name)):
        return False
    var, fn = args[1].value.id, parents.get(call)
    while fn is not None and not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        fn = parents.get(fn)
    if fn is None:
        return False
    stores = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == var and not isinstance(n.ctx, ast.Load)]
    body = fn.body[1:] if fn.body and isinstance(fn.body[0], ast.Expr) else fn.body  # past a docstring
    first = body[0] if body else None
    return (len(stores) == 1 and isinstance(first, ast.Assign) and first.targets == [stores[0]]
            and isinstance(first.value, ast.Call) and path(first.value.func) == "torch.device"
            and first.lineno < call.lineno)


def _jit_target(call: ast.Call, path) -> str | None:  # noqa: ANN001
    """`triton.jit(f)`, `triton.autotune(...)(triton.jit(f))`: the function made a kernel."""
    func = call.func
    if isinstance(func, ast.Call):
        if path(func.func) not in _KERNEL_DECORATORS:
            return None
    elif path(func) not in _KERNEL_DECORATORS:
        return None
    if not call.args:
        return None
    arg = call.args[0]
    if isinstance(arg, ast.Name):
        return arg.id
    return _jit_target(arg, path) if isinstance(arg, ast.Call) else None


_BUILTIN_NAMES = frozenset(dir(builtins))
# Methods of the builtin containers and scalars: `nargs.copy()` in an autotune pre-hook is a dict's copy, not the
# `copy` module some allowed module holds under that name (a false flag found in the scan review, session 11).
_BUILTIN_TYPE_ATTRIBUTES = frozenset(name for t in (dict, list, set, frozenset, tuple, str, bytes, int, float)
                                     for name in dir(t) if not name.startswith("_"))


def _bound_names(nodes: list[ast.AST]) -> frozenset[str]:
    """Every name the answer binds in any scope (scope-blind: only to find names it never binds)."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    # `global x` / `nonlocal x` declare, they bind nothing: a declaration in a function that never runs made
    # `inspect` "a name the answer binds" while the module never held it (red-team round s23).
    return frozenset(names)


def _annotations(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.arg):
        return [node.annotation] if node.annotation else []
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [node.returns] if node.returns else []
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    return []


def _class_scope_binds(node: ast.ClassDef) -> frozenset[str]:
    """Every name a class body binds in its own scope: assignment, tuple, for, with, walrus and except
    targets, imports, defs, `del` and match captures (not inside nested functions, classes or lambdas).
    A class body reads these names from the class, the module, then builtins (scan review, session 11)."""
    names: set[str] = set()
    todo = list(node.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            names.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(n.name)
            todo.extend([*n.decorator_list, *getattr(n, "bases", []), *(k.value for k in getattr(n, "keywords", []))])
            continue
        elif isinstance(n, ast.alias):
            names.add((n.asname or n.name).split(".")[0])
        elif isinstance(n, ast.ExceptHandler) and n.name:
            names.add(n.name)
        elif isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        if not isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            todo.extend(ast.iter_child_nodes(n))
    return frozenset(names)


def _declared_only(tree: ast.Module) -> frozenset[str]:
    """Module names that only a bare annotation (`x: int`) or a `del` names: the module never holds them, and a
    kernel reading one read the interpreter's object of that name (red-team round s26)."""
    valued, annotated, deleted = set(), set(), set()
    todo = list(tree.body)
    while todo:
        n = todo.pop()
        if isinstance(n, ast.AnnAssign) and n.value is None and isinstance(n.target, ast.Name):
            annotated.add(n.target.id)
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del):
            deleted.add(n.id)  # `X = 0; del X`: whatever bound it, the module may not hold it when a kernel runs
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            valued.add(n.id)
        if not isinstance(n, _SCOPES):
            todo.extend(ast.iter_child_nodes(n))
    return frozenset((annotated - valued) | deleted)


def _function_names(fn: ast.AST) -> tuple[frozenset[str], frozenset[str]]:
    """(parameters and names bound in `fn`'s own scope, not declared global or nonlocal; names it declares
    global, which resolve to the module, never an enclosing function)."""
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a)
    declared: set[str] = set()
    declared_global: set[str] = set()
    todo = list(ast.iter_child_nodes(fn)) if not isinstance(fn, ast.Lambda) else []
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            declared.update(node.names)
            if isinstance(node, ast.Global):
                declared_global.update(node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        if not isinstance(node, _SCOPES):
            todo.extend(ast.iter_child_nodes(node))
    return frozenset(names - declared), frozenset(declared_global)


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        for block in ("body", "orelse", "finalbody"):
            if isinstance(stmt, (ast.If, ast.Try, ast.With)):
                out.extend(_top_level(getattr(stmt, block, [])))
        if isinstance(stmt, ast.Try):
            for h in stmt.handlers:
                out.extend(_top_level(h.body))
    return out
