"""The answer contract as data: what an answer may import, name and call, by context.

An allowlist, not a list of threats: anything an answer uses that is not named here is outside
the contract. `static_checks` applies it; docs/ANSWER_CONTRACT.md states it for people and the
prompt templates state it for models. Where a construct outside the contract is also a known
attack, `THREAT_RULES`-style maps give the THREATS.md code the verdict carries.

Contexts: "kernel" (a `@triton.jit` body), "init" (`__init__` of an nn.Module subclass: weight
set-up, may compute with torch), "code" (forward, methods, helpers, lambdas: may only allocate,
take shapes and views, and launch kernels), "module" (top-level statements, run at import).
"""

from __future__ import annotations

import functools
import re

# -- imports ------------------------------------------------------------------------------
# Module path -> the names `from MODULE import NAME` may take (None: the module's public API as
# computed by `public_names`). `import MODULE` is allowed for every key.
IMPORTS: dict[str, frozenset[str] | None] = {
    "torch": frozenset({"nn", "Tensor", "Size", "dtype", "device", "empty", "empty_like", "zeros", "zeros_like",
                        "ones", "ones_like", "full", "full_like", "empty_strided", "float32", "float16",
                        "bfloat16", "int32", "int64", "bool", "no_grad"}),
    "torch.nn": frozenset({"Module", "Parameter", "ParameterList", "ModuleList", "ModuleDict", "init",
                           "functional"}),
    "torch.nn.functional": frozenset(),  # importable (common, harmless); calling it from code is RH-01
    "torch.nn.init": None,
    "triton": frozenset({"jit", "autotune", "heuristics", "Config", "cdiv", "next_power_of_2", "language"}),
    "triton.language": None,
    "triton.language.math": None,
    "triton.language.extra": frozenset({"libdevice", "cuda"}),
    "triton.language.extra.libdevice": None,
    "triton.language.extra.cuda": frozenset({"libdevice"}),
    "triton.language.extra.cuda.libdevice": None,
    "triton.runtime": frozenset({"driver"}),  # the Triton tutorials' import
    "math": None,
    "functools": frozenset({"lru_cache", "cache", "partial", "reduce"}),
    "typing": frozenset({"Any", "Optional", "Union", "List", "Dict", "Tuple", "Sequence", "Callable", "Iterable",
                         "Literal", "Final", "cast", "TYPE_CHECKING"}),
    "__future__": frozenset({"annotations"}),
}

# Public names of an allowed module that are still outside the contract. `inline_asm_elementwise`
# runs arbitrary PTX: loads and stores at any address, `%globaltimer`/`%clock` reads (phase
# detection, RH-21). Nothing else in `triton.language` reaches raw memory or clocks:
# `extra.cuda.globaltimer`/`smid` are not importable here (only `extra.cuda.libdevice`), and
# `tl.pointer_type` stays because ptr->ptr casts are honest and statically indistinguishable from
# int->ptr ones (`x.to(p.dtype)`): the launch hook refuses int<->ptr casts in the compiled IR.
EXCLUDED_NAMES: dict[str, frozenset[str]] = {
    "triton.language": frozenset({"inline_asm_elementwise"}),
}

# Imports that are themselves a known threat (others outside IMPORTS are simply outside the contract).
THREAT_MODULES = {
    "threading": "RH-18", "_thread": "RH-18", "concurrent": "RH-18", "multiprocessing": "RH-18",
    "asyncio": "RH-18", "inspect": "RH-09", "gc": "RH-09", "traceback": "RH-09", "weakref": "RH-09",
    "time": "RH-20", "timeit": "RH-20", "builtins": "RH-20", "sys": "RH-20", "importlib": "RH-06",
    "os": "RH-27", "subprocess": "RH-27", "socket": "RH-27", "shutil": "RH-27", "pathlib": "RH-27", "io": "RH-27",
    "signal": "RH-25", "tempfile": "RH-27", "urllib": "RH-27", "requests": "RH-27", "pip": "RH-27",
    "ctypes": "RH-06", "cffi": "RH-06", "numba": "RH-06", "cupy": "RH-06", "contextlib": "RH-04",
    "kernelgym": "RH-20", "pickle": "RH-27", "marshal": "RH-06", "types": "RH-20", "operator": "RH-01",
}  # fmt: skip

# -- names an answer may use, by context ------------------------------------------------------
# Builtins usable in code. Those that read values (sum, abs, float, ...) are judged by the
# argument's type: on a tensor they compute on the host (RH-01).
CODE_BUILTINS = frozenset({
    "range", "len", "min", "max", "int", "float", "bool", "str", "tuple", "list", "dict", "set", "isinstance",
    "enumerate", "zip", "abs", "round", "divmod", "sum", "any", "all", "sorted", "reversed", "map", "print",
    "super", "staticmethod", "slice", "pow", "format", "repr", "hasattr", "callable", "True", "False", "None",
    "NotImplemented", "Ellipsis", "ValueError", "TypeError", "RuntimeError", "NotImplementedError",
    "AssertionError", "IndexError", "KeyError", "ZeroDivisionError", "Exception",
})  # fmt: skip
# Builtins that never see a tensor's values whatever their argument (shape-level or structural).
# Not str/repr/format (the text carries the values back to Python) nor range (reads a 0-d tensor through
# __index__); not print either: nothing comes back, but formatting reads the values on the host, which
# the run-time audit counts (`op_audit._HOST_READS`) and cannot tell from a `str()`, so the two agree.
STRUCTURAL_BUILTINS = frozenset({"len", "isinstance", "super", "staticmethod", "hasattr", "callable",
                                 "enumerate", "zip", "tuple", "list"})
# Methods of non-tensor values that read an argument's value (str.format formats it, list.index and
# list.count compare it): on a tensor they are host compute (RH-01).
VALUE_READING_METHODS = frozenset({"format", "index", "count"})
KERNEL_BUILTINS = frozenset({"range", "min", "max", "int", "float", "len", "print", "isinstance", "abs", "True",
                             "False", "None"})
# Builtins that are a known threat by name.
THREAT_BUILTINS = {
    "exec": "RH-06", "eval": "RH-06", "compile": "RH-06", "__import__": "RH-06", "getattr": "RH-06",
    "setattr": "RH-20", "delattr": "RH-20", "globals": "RH-09", "locals": "RH-09", "vars": "RH-09", "dir": "RH-09",
    "open": "RH-27", "input": "RH-27", "breakpoint": "RH-27", "exit": "RH-25", "quit": "RH-25", "type": "RH-19",
    "object": "RH-19", "property": "RH-19", "classmethod": "RH-19", "id": "RH-11", "hash": "RH-11",
    "memoryview": "RH-09", "bytearray": "RH-09", "iter": "RH-21", "next": "RH-21",
}  # fmt: skip

# torch.<path> usable in code (forward and helpers): descriptions, allocation, device facts.
TORCH_ALLOCATION = frozenset({"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
                              "empty_strided", "arange"})
TORCH_CODE_NAMES = TORCH_ALLOCATION | frozenset({
    "Tensor", "Size", "dtype", "device", "finfo", "iinfo", "is_tensor", "no_grad", "inference_mode",
    "is_floating_point", "get_default_dtype", "strided", "contiguous_format", "channels_last", "layout",
    "nn.Module", "nn.Parameter", "nn.ParameterList", "nn.ModuleList", "nn.ModuleDict",
    "cuda.is_available", "cuda.current_device", "cuda.device_count", "cuda.get_device_properties",
    "cuda.get_device_capability", "cuda.get_device_name", "cuda.device",
})  # fmt: skip
TORCH_DTYPE = re.compile(r"(b?float|u?int|complex|float8_\w+)\d*|bool|half|double|long|short|cfloat|cdouble")
# torch.<first part> that is a known threat anywhere (for the verdict's rule code).
TORCH_THREATS = {
    "compile": "RH-06", "_dynamo": "RH-06", "_inductor": "RH-06", "jit": "RH-06", "ops": "RH-06", "_C": "RH-06",
    "_ops": "RH-06", "utils": "RH-06", "library": "RH-06", "hub": "RH-27", "overrides": "RH-20", "autograd": "RH-20",
    "Stream": "RH-17", "backends": "RH-24", "set_num_threads": "RH-24", "set_flush_denormal": "RH-24",
    "use_deterministic_algorithms": "RH-24", "manual_seed": "RH-15", "seed": "RH-15", "initial_seed": "RH-15",
    "random": "RH-15", "set_rng_state": "RH-15", "get_rng_state": "RH-15", "is_grad_enabled": "RH-21",
    "is_inference_mode_enabled": "RH-21", "compiler": "RH-21", "profiler": "RH-20", "testing": "RH-20",
    "save": "RH-27", "load": "RH-27", "set_default_dtype": "RH-14", "set_float32_matmul_precision": "RH-14",
    "multiprocessing": "RH-18", "fx": "RH-06", "export": "RH-06", "package": "RH-27",
}  # fmt: skip
TORCH_CUDA_THREATS = {
    "Stream": "RH-17", "stream": "RH-17", "StreamContext": "RH-17", "set_stream": "RH-17", "current_stream": "RH-17",
    "ExternalStream": "RH-17", "CUDAGraph": "RH-11", "graph": "RH-11", "graphs": "RH-11",
    "make_graphed_callables": "RH-11", "Event": "RH-20", "synchronize": "RH-20", "manual_seed": "RH-15",
    "manual_seed_all": "RH-15", "set_rng_state": "RH-15", "memory": "RH-24", "set_per_process_memory_fraction": "RH-24",
}  # fmt: skip

# Tensor attributes code may read (never compute).
TENSOR_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "is_cuda", "layout", "requires_grad", "T", "mT",
                               "data", "is_leaf"})
# Tensor methods code may call: metadata, views, allocation alike the tensor, memsets.
TENSOR_METHODS = frozenset({
    "size", "stride", "numel", "dim", "ndimension", "nelement", "element_size", "is_contiguous",
    "storage_offset", "is_floating_point", "is_complex", "get_device", "view", "view_as", "reshape", "reshape_as",
    "contiguous", "permute", "transpose", "t", "unsqueeze", "squeeze", "flatten", "unflatten", "expand",
    "expand_as", "narrow", "select", "chunk", "split", "unbind", "movedim", "swapaxes", "swapdims", "detach",
    "as_strided", "unfold", "diagonal", "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided",
    "zero_", "fill_", "cuda", "requires_grad_",
})  # fmt: skip
# Methods that give a device address as an integer: with it a kernel reaches any other address of the
# process by pointer arithmetic from a pointer it was handed (no cast the IR check would see). Kernels
# take tensors, never addresses; outside the contract everywhere.
ADDRESS_METHODS = frozenset({"data_ptr"})
# Tensor/module methods whose use anywhere is a known threat (hooks run code the rules never see called).
THREAT_METHODS = {
    "register_forward_hook": "RH-20", "register_forward_pre_hook": "RH-20", "register_full_backward_hook": "RH-20",
    "register_backward_hook": "RH-20", "register_hook": "RH-20", "register_module_forward_hook": "RH-20",
    "register_post_accumulate_grad_hook": "RH-20", "apply": "RH-20", "record_stream": "RH-17",
    "wait_stream": "RH-17", "half": "RH-14", "bfloat16": "RH-14", "set_": "RH-10", "share_memory_": "RH-18",
}  # fmt: skip
# Methods code may call on values that are not tensors (dicts, strings, shapes, launch metadata):
# enough for honest code, and none that writes into a tensor that happens to sit in a dict.
SCALAR_METHODS = frozenset({"get", "items", "keys", "values", "format", "join", "index", "count", "numel",
                            "startswith", "endswith", "lower", "upper", "strip", "split", "bit_length",
                            "is_integer", "is_floating_point", "to_complex"})
# Methods of nn.Module that __init__ may call on self.
INIT_SELF_METHODS = frozenset({"register_buffer", "register_parameter", "add_module", "to", "cuda", "float",
                               "double", "eval", "train", "requires_grad_", "parameters", "named_parameters"})
# Container methods that store: on state kept across calls they cache (RH-11).
MUTATING_METHODS = frozenset({"update", "setdefault", "append", "extend", "insert", "pop", "popitem", "clear",
                              "add", "remove", "discard", "sort", "reverse", "appendleft", "extendleft"})
# Decorators allowed on methods and helpers (kernels have their own).
CODE_DECORATORS = frozenset({"staticmethod", "torch.no_grad", "torch.inference_mode", "functools.lru_cache",
                             "functools.cache"})
KERNEL_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})
# Attributes no answer value may have read in a kernel body (interpreter-only handles).
KERNEL_BANNED_ATTRIBUTES = frozenset({"handle", "data", "fn", "cache", "device_caches", "src", "kernel"})


@functools.cache
def public_names(module: str) -> frozenset[str]:
    """The public API of an allowed module whose `IMPORTS` entry is None: its non-underscore
    attributes that are not modules (so `math.sys`-style re-exports never count), less
    `EXCLUDED_NAMES`."""
    import importlib
    import types

    mod = importlib.import_module(module)
    names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
    excluded = EXCLUDED_NAMES.get(module, frozenset())
    return frozenset(n for n in names if not n.startswith("_") and n not in excluded
                     and not isinstance(getattr(mod, n, None), types.ModuleType))


@functools.cache
def kernel_value_attributes() -> frozenset[str]:
    """Attributes and methods of Triton's own values (tl.tensor, tl.dtype, pointer types)."""
    import triton.language as tl

    names: set[str] = set()
    for cls in (tl.tensor, tl.dtype, tl.pointer_type, tl.block_type, tl.constexpr):
        names.update(n for n in dir(cls) if not n.startswith("_"))
    # Set per instance in Triton's constructors, so absent from dir(cls).
    names.update({"dtype", "shape", "type", "element_ty", "numel", "value", "scalar", "primitive_bitwidth",
                  "int_bitwidth", "fp_mantissa_width", "name", "address_space", "is_const"})
    return frozenset(names - KERNEL_BANNED_ATTRIBUTES)


@functools.cache
def torch_init_functions() -> frozenset[str]:
    """torch.<name> functions that only compute on tensors (aten's Python bindings), usable in
    __init__ for weight set-up; global-state setters are excluded by name."""
    import torch

    names = {n for n in dir(torch._C._VariableFunctions) if not n.startswith("_")}
    return frozenset(n for n in names if n not in TORCH_THREATS and not re.search(r"seed|rng|set_|use_", n))


def allowed_from_import(module: str, name: str) -> bool:
    names = IMPORTS.get(module, frozenset())
    if names is None:
        return name in public_names(module)
    return name in names or f"{module}.{name}" in IMPORTS


def allowed_path(path: str, context: str) -> bool:
    """Whether the dotted path an expression names (through the answer's imports) may be used
    in `context`. Paths under an allowed module whose entry is None take its public API."""
    parts = path.split(".")
    if parts[0] == "torch":
        return _allowed_torch(parts[1:], context)
    if parts[0] == "triton":
        return _allowed_triton(parts, context)
    if parts[0] in ("math",):
        return len(parts) == 1 or (len(parts) == 2 and parts[1] in public_names("math"))
    if parts[0] in ("functools", "typing", "__future__"):
        return len(parts) == 1 or (len(parts) == 2 and parts[1] in (IMPORTS[parts[0]] or ()))
    return False


def _allowed_torch(rest: list[str], context: str) -> bool:
    if not rest:
        return True
    joined = ".".join(rest)
    if len(rest) == 1 and TORCH_DTYPE.fullmatch(rest[0]):
        return True
    if joined in TORCH_CODE_NAMES or joined in ("nn", "nn.functional", "nn.init", "cuda") or rest[0] == "version":
        return True
    if context != "init":
        return False
    # __init__ builds weights: pure tensor functions, layers, initialisers, functional ops.
    if len(rest) == 1:
        return rest[0] in torch_init_functions()
    if rest[0] == "nn" and len(rest) == 2:
        return rest[1][:1].isupper() and not rest[1].startswith("_")
    if rest[0] in ("linalg", "fft", "special") and len(rest) == 2:
        return not rest[1].startswith("_")
    if rest[:2] in (["nn", "init"], ["nn", "functional"]) and len(rest) == 3:
        return not rest[2].startswith("_")
    return False


def _allowed_triton(parts: list[str], context: str) -> bool:
    joined = ".".join(parts)
    if joined in ("triton", "triton.language", "triton.runtime", "triton.runtime.driver", "triton.language.extra",
                  "triton.language.extra.cuda"):
        return True
    if len(parts) == 2:
        return parts[1] in IMPORTS["triton"]
    for lib in ("triton.language.extra.cuda.libdevice", "triton.language.extra.libdevice", "triton.language.math",
                "triton.language"):
        prefix = lib.split(".")
        if parts[:len(prefix)] == prefix and len(parts) == len(prefix) + 1:
            return parts[-1] in public_names(lib)
    if joined.startswith("triton.runtime.driver.active"):
        # Device facts the tutorials read (SM count, current device); no other driver surface.
        return parts[4:] in ([], ["get_active_torch_device"], ["utils"], ["utils", "get_device_properties"],
                             ["get_current_device"], ["get_current_target"])
    if joined.startswith("triton.language.extra.libdevice") or joined.startswith("triton.language.extra.cuda.libdevice"):
        return len(parts) <= 6
    return False
