"""The names behind the static threat rules: allowed modules, banned builtins and attributes,
torch functions that compute, container methods that keep state. Data only; the AST visitor that
applies them is `static_checks`."""

from __future__ import annotations

import re

ALLOWED_MODULES = (
    "torch", "torch.nn", "torch.nn.functional", "triton", "triton.language", "math", "typing",
    "functools", "dataclasses", "__future__", "numbers", "enum",
)  # fmt: skip
ALLOWED_MODULE_PREFIXES = ("triton.language.",)
# Modules whose import is itself the threat named (others outside the allowlist are RH-06).
THREAT_MODULES = {
    "threading": "RH-18", "_thread": "RH-18", "concurrent": "RH-18", "multiprocessing": "RH-18",
    "asyncio": "RH-18", "inspect": "RH-09", "gc": "RH-09", "traceback": "RH-09", "time": "RH-20",
    "timeit": "RH-20", "builtins": "RH-20", "sys": "RH-20", "os": "RH-27", "subprocess": "RH-27",
    "socket": "RH-27", "shutil": "RH-27", "pathlib": "RH-27", "io": "RH-27", "signal": "RH-25",
    "tempfile": "RH-27", "urllib": "RH-27", "requests": "RH-27", "pip": "RH-27", "ctypes": "RH-06", "contextlib": "RH-04",
}  # fmt: skip
BANNED_BUILTINS = {
    "exec": "RH-06", "eval": "RH-06", "compile": "RH-06", "__import__": "RH-06",
    "setattr": "RH-20", "delattr": "RH-20", "globals": "RH-09", "locals": "RH-09", "vars": "RH-09",
    "open": "RH-27", "input": "RH-27", "breakpoint": "RH-27", "exit": "RH-25", "quit": "RH-25",
}  # fmt: skip
BANNED_ATTRIBUTES = {
    "f_back": "RH-09", "f_locals": "RH-09", "f_globals": "RH-09", "f_code": "RH-09", "_getframe": "RH-09",
    "gi_frame": "RH-09", "tb_frame": "RH-09", "__globals__": "RH-09", "__builtins__": "RH-20",
    "__subclasses__": "RH-20", "__code__": "RH-20", "__dict__": "RH-20", "__class__": "RH-19",
    "_make_subclass": "RH-19", "__torch_function__": "RH-19", "__torch_dispatch__": "RH-19",
    "record_stream": "RH-17", "wait_stream": "RH-17", "accessPolicyWindow": "RH-23",
    "persisting_l2_cache_max_size": "RH-23", "allow_tf32": "RH-14", "set_float32_matmul_precision": "RH-14", "argv": "RH-21",
}  # fmt: skip
# torch.<name> that is a threat wherever it appears (not only in forward).
TORCH_THREATS = {
    "compile": "RH-06", "_dynamo": "RH-06", "_inductor": "RH-06", "jit": "RH-06", "ops": "RH-06",
    "_C": "RH-06", "_ops": "RH-06", "utils": "RH-06", "library": "RH-06", "Stream": "RH-17",
    "backends": "RH-24", "set_num_threads": "RH-24", "set_flush_denormal": "RH-24",
    "use_deterministic_algorithms": "RH-24", "manual_seed": "RH-15", "seed": "RH-15", "random": "RH-15",
    "set_rng_state": "RH-15", "is_grad_enabled": "RH-21", "is_inference_mode_enabled": "RH-21",
    "compiler": "RH-21", "profiler": "RH-20", "testing": "RH-20", "save": "RH-27", "load": "RH-27",
}  # fmt: skip
TORCH_CUDA_THREATS = {
    "Stream": "RH-17", "stream": "RH-17", "StreamContext": "RH-17", "set_stream": "RH-17",
    "ExternalStream": "RH-17", "CUDAGraph": "RH-11", "graph": "RH-11", "graphs": "RH-11",
    "make_graphed_callables": "RH-11", "Event": "RH-20", "synchronize": "RH-20", "manual_seed": "RH-15",
    "manual_seed_all": "RH-15", "set_rng_state": "RH-15", "memory": "RH-24", "set_per_process_memory_fraction": "RH-24",
}  # fmt: skip
# Outside kernels and __init__ the answer may only allocate; everything else under torch.* computes.
TORCH_ALLOCATION_CALLS = {
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "full", "full_like", "ones", "ones_like",
    "Size", "device", "is_tensor", "no_grad", "inference_mode", "set_grad_enabled", "get_default_dtype",
    "finfo", "iinfo", "result_type", "promote_types", "cuda", "float32", "float16", "bfloat16", "int64",
}  # fmt: skip
# torch.<name> values that describe data (dtypes, layouts, version), never compute.
TORCH_DESCRIPTIONS = {
    "dtype", "layout", "memory_format", "strided", "contiguous_format", "channels_last", "channels_last_3d",
    "preserve_format", "version", "float", "half", "double", "short", "long", "int", "bool", "cfloat",
    "cdouble", "chalf",
}  # fmt: skip
TORCH_DTYPE_NAME = re.compile(r"(b?float|u?int|complex|bits|q?u?int)\d.*")
TENSOR_COMPUTE_METHODS = {
    "matmul", "mm", "bmm", "mv", "addmm", "addmv", "baddbmm", "einsum", "dot", "outer", "sum", "mean",
    "max", "min", "amax", "amin", "argmax", "argmin", "prod", "std", "var", "norm", "exp", "log", "sqrt",
    "rsqrt", "sigmoid", "tanh", "relu", "softmax", "log_softmax", "cumsum", "cumprod", "sort", "topk",
    "abs", "clamp", "clamp_", "clip", "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "pow",
    "neg", "erf", "gelu", "silu", "where", "masked_fill", "masked_fill_", "index_select", "gather",
    "scatter", "scatter_", "scatter_add", "clone", "copy_", "fill_", "zero_", "lerp", "addcmul",
    "conv1d", "conv2d", "conv3d", "logsumexp", "square", "reciprocal", "sign", "floor", "ceil", "round",
    "maximum", "minimum", "tril", "triu", "flip", "roll", "repeat", "tile", "unfold", "sin", "cos",
}  # fmt: skip
# `a.__matmul__(b)` and friends: the operators spelt as calls (plain `+`/`*` on tensors stay allowed).
ARITH_DUNDERS = {
    f"__{p}{op}__" for op in ("matmul", "mul", "add", "sub", "truediv", "floordiv", "mod", "pow", "and", "or",
                             "xor", "lshift", "rshift") for p in ("", "r", "i")
} | {"__neg__", "__pos__", "__abs__", "__invert__"}  # fmt: skip
# Methods that store into a container: on an attribute of `self` in forward they keep state across calls.
STORE_METHODS = {"update", "setdefault", "append", "extend", "insert", "__setitem__", "popitem", "appendleft", "extendleft"}
# Further methods that mutate a container, counted when the attribute is known to hold one.
CONTAINER_METHODS = STORE_METHODS | {"add", "pop", "clear", "remove", "discard"}
# Calls that make a dict or set (what a forward can key outputs by).
KEYED_FACTORIES = ("dict", "set", "defaultdict", "OrderedDict", "WeakKeyDictionary", "WeakValueDictionary", "fromkeys")
