"""Triton's CPU interpreter made to run what an honest GPU answer runs, with the GPU's semantics.

On a machine without a GPU the judge runs answers under `TRITON_INTERPRET=1`. Out of the box
three things an answer may do on a GPU fail there (triton 3.9):

- `@triton.autotune` with several configs asks `driver.active` for a benchmarker: "0 active drivers".
- `libdevice.*` (`triton.language.extra.libdevice`, `...extra.cuda.libdevice`) has no interpreter
  implementation: the generic module's stubs return None, the CUDA module's raise.
- `triton.runtime.driver.active` (the tutorials' `get_active_torch_device()`,
  `utils.get_device_properties(...)`, `get_current_target()`) and `kernel.warmup(...)`, which the
  fused-softmax tutorial uses to size a persistent grid, have nothing behind them.

And one fails only on older Triton (3.6, the GPU image's, under NumPy 2): a scalar kernel argument
used as a Python integer (`for k in range(0, K, BLOCK_K)`) raises "only 0-dimensional arrays can
be converted to Python scalars", because the interpreter converts a one-element array with `int()`.

`make_interpreter_faithful` gives each a CPU counterpart, and installs `interpreter_semantics`
(boolean operators, program order, float scalars and grid arguments as a GPU has them). The rules it follows:
- Autotune: nothing is timed on CPU, so every config of a new key runs once on the real arguments
  (hooks, `reset_to_zero` and `restore_value` included, as in GPU tuning, so a config that fails
  or an answer that relies on a single launch fails here too) and the first config then serves
  that key. Whether the other configs give the same result is not compared in the child: a check
  there would be an untrusted hint, and the parent's trials judge what the answer returns.
- libdevice: Triton's own CUDA libdevice table decides which argument types are accepted and
  which symbol is called (so what does not compile on a GPU does not run here); the symbol is
  then computed with numpy (or `math`) in float64 and rounded to the result type. Rounding-mode
  variants (`_rz`, `_rd`, `_ru`) round to nearest: at most one ulp apart. A few functions have
  no counterpart (Bessel functions other than i0, `byte_perm`) and say so when called.
- The driver reports the judge's device for tensors (CPU) and an H100 for everything a GPU
  answer reads to choose sizes (SM count, registers, shared memory, target `cuda`/90/32):
  honest kernels give the same results whatever those numbers are. `warmup` returns a stand-in
  for the compiled kernel with plausible resource figures, launchable like one.

Nothing here touches what the judge measures with (`kernelgym.judge.timing`, the profiler, the
launch hook): on CPU nothing is timed, and launches still go through `InterpretedFunction.run`,
where the launch hook counts them.
"""

from __future__ import annotations

import ast
import inspect
import math
import os
import re
import textwrap
import types
from typing import Any, Callable

import numpy as np

_INSTALLED = False

# What a GPU answer reads from the driver: an H100 SXM, the judge's reference GPU (docs/BENCHMARKS.md).
H100_PROPERTIES = {
    "max_shared_mem": 232448, "max_num_regs": 65536, "multiprocessor_count": 132, "warpSize": 32,
    "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120,
}  # fmt: skip
H100_CAPABILITY = (9, 0)


def interpreting() -> bool:
    """Whether Triton runs kernels in its interpreter in this process (`TRITON_INTERPRET`)."""
    try:
        from triton import knobs

        return bool(knobs.runtime.interpret)
    except (ImportError, AttributeError):  # triton before knobs
        return os.environ.get("TRITON_INTERPRET", "0").lower() in ("1", "true", "on", "yes")


def make_interpreter_faithful() -> None:
    """Give autotune, libdevice, `driver.active` and `warmup` their GPU behaviour under Triton's
    interpreter (module docstring). Idempotent; does nothing unless the interpreter is on, so it is
    safe to call in every judge child before the answer is imported."""
    global _INSTALLED
    if _INSTALLED or not interpreting():
        return
    _install_driver()
    _install_autotune_benchmarker()
    _install_libdevice()
    _install_warmup()
    _install_torch_cuda_facts()
    _install_scalar_index()
    _install_private_globals()
    from kernelgym.judge import interpreter_semantics

    interpreter_semantics.install()  # `and`/`or`, program order, float scalars, grid arguments: as on a GPU
    from kernelgym.judge import front_end

    # What Triton's GPU front end refuses for the GPU stood in for is refused here too, before the launch.
    front_end.install(InterpreterDriver().get_current_target())
    _INSTALLED = True


def _install_private_globals() -> None:
    """Rewritten kernels run in a copy of their module's globals, their closure, and only the interpreter names
    the rewrite itself wrote into them; the tree compiled is our own rewrite of the kernel's source, found from its
    `def` line in the syntax tree. Triton's rewriter adds every name of its own module (`inspect`, `np`, `time`...)
    to the kernel's module, compiles whatever tree its replaceable transformer returns and takes the last `def `
    line of the source (red-team rounds s21, s23, s25-s27). A GPU does none of these."""
    from triton.runtime import interpreter

    rewriter = getattr(interpreter, "FunctionRewriter", None)
    original = getattr(rewriter, "_compile_and_exec", None)
    if original is None or getattr(original, "_kernelgym_private", False):
        return

    def compile_and_exec(self: Any, transformed_ast: Any) -> Any:
        fn = self.fn
        # The copy is taken at the kernel's first launch, after its module ran: the names a kernel reads
        # (constexprs, helper kernels) are there; the answer's module gains nothing. Of the interpreter's names
        # only those the rewrite itself wrote into the kernel (`_InterpreterComparison`, `interpreter_semantic`,
        # ours) are added: a name the kernel's own text reads is its module's, its closure's or undefined, as on
        # a GPU. Red-team rounds s23-s26 read `inspect` and `_LangPatchScope` from the interpreter by names the
        # module never held (a `global` declaration, a bare annotation, a `del`, a closure the rewrite drops), and
        # Triton's own `_compile_and_exec` copies every interpreter global into the scope, so it is not called.
        # The tree compiled is Triton's own rewrite of the kernel's source, made here: never `transformed_ast`, which
        # the rewriter's (replaceable) transformer made (red-team round s27: an answer's transformer turned
        # `return a.b` into `return a.__self__`, and `return a` into an interpreter name).
        lines, _ = inspect.getsourcelines(fn)
        source = ast.parse(self._prepare_source(lines))
        own = {n.id for n in ast.walk(source) if isinstance(n, ast.Name)}
        transformed_ast = interpreter.ASTTransformer().visit(source)
        ast.fix_missing_locations(transformed_ast)
        ast.increment_lineno(transformed_ast, self.def_file_lineno - 1)
        written = {n.id for n in ast.walk(transformed_ast) if isinstance(n, ast.Name)} - own
        closure, empty = {}, []
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                closure[name] = cell.cell_contents  # the rewrite runs the source at top level: closures as globals
            except ValueError:
                empty.append(name)
        scope = {**fn.__globals__, **closure,
                 **{k: v for k, v in vars(interpreter).items() if k in written}}
        if empty:
            _unbind(scope, empty)
        code = compile(transformed_ast, filename=self.filename, mode="exec")
        local_namespace = {**self.kwargs}
        exec(code, scope, local_namespace)  # noqa: S102 - the rewritten kernel, as Triton runs it
        return local_namespace[fn.__name__]

    def find_def(self: Any, lines: list[str]) -> int:
        # The function's own `def` line, from its syntax tree; the interpreter took the last line starting with
        # `def `, so a `def` inside the kernel's docstring was what ran (red-team round s25), and a first-line
        # rule would take one in a decorator's string before a real `def\tname(`.
        try:
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except SyntaxError:
            tree = None
        fdef = next((n for n in (tree.body if tree else []) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                    None)
        if fdef is None:
            raise RuntimeError("the kernel's source does not parse as one function")
        return fdef.lineno

    if hasattr(rewriter, "_find_def"):
        rewriter._find_def = find_def

    compile_and_exec._kernelgym_private = True  # type: ignore[attr-defined]
    rewriter._compile_and_exec = compile_and_exec


def _unbind(scope: dict[str, Any], names: list[str]) -> None:
    """Make `names` (free variables whose closure cells are empty) raise NameError when the rewritten kernel reads
    them, as Python raises for an empty cell: the rewrite runs the kernel at top level, where a free variable is a
    global lookup, and a name missing from the scope fell through to the module's globals, then its builtins
    (red-team round s28: `open`, bound in the enclosing function only after the launch)."""
    import builtins

    for name in names:
        scope.pop(name, None)
    served = scope.get("__builtins__", builtins)
    served = dict(vars(served) if isinstance(served, types.ModuleType) else served)
    for name in names:
        served.pop(name, None)
    scope["__builtins__"] = served


def _install_scalar_index() -> None:
    """Scalars as Python integers on Triton versions whose interpreter calls `int()` on a
    one-element array (later versions squeeze it first, which is what this does). A pointer is no
    integer: the GPU front end refuses `int(ptr)`, and its address let a kernel reach any host address
    under the interpreter (red-team round s28); its text is the GPU's (`pointer<fp32>[]`), no address."""
    from triton.runtime import interpreter

    patch = getattr(interpreter, "_patch_lang_tensor", None)
    if patch is None or getattr(patch, "_kernelgym_index", False):
        return

    def is_pointer(self: Any) -> bool:
        import triton.language as tl

        return isinstance(getattr(self, "dtype", None), tl.pointer_type)

    def index(self: Any) -> int:
        if is_pointer(self):
            raise TypeError(f"a pointer ({self.dtype}) cannot be used as an integer: the GPU compiler refuses it too")
        data = np.asarray(self.handle.data)
        if data.size != 1:  # a block is no integer: the GPU compiler refuses it too
            raise TypeError(f"only a scalar can be used as an integer, not a block of {data.size} values")
        return int(data.reshape(()))

    def text(self: Any) -> str:
        if is_pointer(self):
            return str(self.dtype) + "[" + ", ".join(str(s) for s in self.shape) + "]"
        return repr(self.handle.data)

    def as_str(self: Any) -> str:
        return text(self) if is_pointer(self) else str(self.handle.data)

    def patch_lang_tensor(tensor: Any, scope: Any) -> None:
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", index)
        scope.set_attr(tensor, "__repr__", text)
        scope.set_attr(tensor, "__str__", as_str)

    patch_lang_tensor._kernelgym_index = True  # type: ignore[attr-defined]
    interpreter._patch_lang_tensor = patch_lang_tensor


# -- driver -------------------------------------------------------------------------------------
def run_each_once(kernel_call: Callable[[], Any], quantiles: Any = None, **_: Any) -> Any:
    """The CPU benchmarker: run the candidate config once and report a time of zero, so that
    Triton's choice among equal times (the first config) is deterministic."""
    kernel_call()
    return [0.0] * len(quantiles) if quantiles else 0.0


class _DeviceUtils:
    @staticmethod
    def get_device_properties(device: Any = None) -> dict[str, int]:
        return dict(H100_PROPERTIES)


class InterpreterDriver:
    """`triton.runtime.driver.active` under the interpreter: CPU tensors, an H100's figures."""

    utils = _DeviceUtils()

    @staticmethod
    def is_active() -> bool:
        return True

    def get_active_torch_device(self) -> Any:
        import torch

        return torch.device("cpu")

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device: int) -> None:
        pass

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_device_capability(self, device: Any = None) -> tuple[int, int]:
        return H100_CAPABILITY

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        major, minor = H100_CAPABILITY
        return GPUTarget("cuda", major * 10 + minor, H100_PROPERTIES["warpSize"])

    def get_benchmarker(self) -> Callable[..., Any]:
        return run_each_once


def _install_torch_cuda_facts() -> None:
    """The device facts an honest answer reads through torch (`torch.cuda.get_device_properties`,
    `with torch.cuda.device(x.device)`, the Liger/flash-attn wrapper idiom) answer as on the GPU
    the interpreter stands in for; `is_available` and everything that would run work stay as they are."""
    import contextlib
    import types

    import torch

    props = types.SimpleNamespace(
        name="NVIDIA H100 80GB HBM3 (Triton interpreter)", major=H100_CAPABILITY[0], minor=H100_CAPABILITY[1],
        multi_processor_count=H100_PROPERTIES["multiprocessor_count"], total_memory=80 << 30,
        warp_size=H100_PROPERTIES["warpSize"], regs_per_multiprocessor=H100_PROPERTIES["max_num_regs"],
        max_threads_per_multi_processor=2048, shared_memory_per_block_optin=H100_PROPERTIES["max_shared_mem"],
        L2_cache_size=50 << 20, is_integrated=False)
    torch.cuda.get_device_properties = lambda device=None: props
    torch.cuda.get_device_capability = lambda device=None: H100_CAPABILITY
    torch.cuda.get_device_name = lambda device=None: props.name
    torch.cuda.current_device = lambda: 0
    torch.cuda.device = lambda device=None: contextlib.nullcontext()


def _install_driver() -> None:
    from triton.runtime.driver import driver

    driver.set_active(InterpreterDriver())


def _install_autotune_benchmarker() -> None:
    """An answer's own `do_bench` (or the deprecated `warmup`/`rep`) would time on a GPU; here every
    autotuner uses `run_each_once`, whatever it was given."""
    from triton.runtime.autotuner import Autotuner

    # A setter that ignores the value: Triton versions that assign `self.do_bench` in __init__ keep working.
    Autotuner.do_bench = property(lambda self: run_each_once, lambda self, value: None)


# -- warmup -------------------------------------------------------------------------------------
class InterpretedKernel:
    """What `kernel.warmup(...)` returns on a GPU (a compiled kernel), for the interpreter: resource
    figures an answer may size its grid from, and `kernel[grid](*args)` launching the kernel with
    the constexprs it was warmed up with (a compiled kernel ignores those given at launch)."""

    n_regs = 32
    n_spills = 0
    n_max_threads = 1024

    def __init__(self, fn: Any, kwargs: dict[str, Any]) -> None:
        self.fn = fn
        constexprs = _constexpr_names(fn)
        self.constants = {k: v for k, v in kwargs.items() if k in constexprs}
        self.metadata = types.SimpleNamespace(
            name=fn.__name__, shared=1024, num_warps=kwargs.get("num_warps", 4),
            num_stages=kwargs.get("num_stages", 3), num_ctas=kwargs.get("num_ctas", 1),
        )  # fmt: skip

    def _init_handles(self) -> None:
        pass

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*args: Any) -> Any:
            named = dict(zip(self.fn.arg_names, args))
            named.update(self.constants)
            return self.fn.run(grid=grid, warmup=False, **named)

        return launch


def _constexpr_names(fn: Any) -> set[str]:
    import triton.language as tl

    names = set()
    for name, ann in inspect.get_annotations(fn.fn).items():
        if ann is tl.constexpr or str(ann).split(".")[-1] == "constexpr":
            names.add(name)
    return names


def _install_warmup() -> None:
    from triton.runtime.interpreter import InterpretedFunction

    def warmup(self: Any, *args: Any, grid: Any = None, **kwargs: Any) -> InterpretedKernel:
        return InterpretedKernel(self, kwargs)

    InterpretedFunction.warmup = warmup


# -- libdevice ----------------------------------------------------------------------------------
def _install_libdevice() -> None:
    import triton.language.extra.libdevice as generic
    from triton.language.extra.cuda import libdevice as cuda
    from triton.runtime import interpreter

    semantic = interpreter.interpreter_semantic
    symbols: dict[str, str] = {}
    for name, fn in inspect.getmembers(cuda, inspect.isfunction):
        if getattr(fn, "__module__", "") != cuda.__name__:
            continue
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            continue
        for symbol in re.findall(r'"(__nv_\w+)"', source):
            symbols[symbol] = name
        wrapped = _with_semantic(fn, semantic)
        setattr(cuda, name, wrapped)
        if hasattr(generic, name):  # on a GPU the compiler maps the generic module onto the CUDA one
            setattr(generic, name, wrapped)

    def create_extern_elementwise(self: Any, lib_name: str, lib_path: str, symbol: str, args: list,
                                  ret_type: Any, is_pure: bool) -> Any:
        name = symbols.get(symbol, symbol)
        scalar = ret_type.scalar
        data = libdevice_numpy(name, [a.data for a in args], interpreter._get_np_dtype(scalar))
        return interpreter.TensorHandle(data, scalar)

    interpreter.InterpreterBuilder.create_extern_elementwise = create_extern_elementwise


def _with_semantic(fn: Callable[..., Any], semantic: Any) -> Callable[..., Any]:
    def call(*args: Any, _semantic: Any = None, **kwargs: Any) -> Any:
        return fn(*args, _semantic=semantic if _semantic is None else _semantic, **kwargs)

    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    call.__module__ = fn.__module__
    call.__wrapped__ = fn  # type: ignore[attr-defined]
    for attr, value in vars(fn).items():  # the builtin marker and signature the compiler reads
        if attr != "__wrapped__":
            setattr(call, attr, value)
    return call


def _vec(f: Callable[..., float]) -> Callable[..., np.ndarray]:
    return np.vectorize(f, otypes=[np.float64])


def _gamma(x: float) -> float:
    try:
        return math.gamma(x)
    except (ValueError, OverflowError):
        return math.inf if x > 0 or x == 0 else math.nan


def _lgamma(x: float) -> float:
    try:
        return math.lgamma(x)
    except (ValueError, OverflowError):
        return math.inf


def _erfinv(y: np.ndarray) -> np.ndarray:
    """erf's inverse in float64: a closed-form start refined by Newton steps on `math.erf`."""
    y = np.asarray(y, dtype=np.float64)
    a = 0.147
    ln = np.log1p(-np.minimum(y * y, 1.0 - 1e-300))
    t = 2.0 / (math.pi * a) + ln / 2.0
    x = np.sign(y) * np.sqrt(np.sqrt(t * t - ln / a) - t)
    erf = _vec(math.erf)
    for _ in range(4):
        x = x - (erf(x) - y) / (2.0 / math.sqrt(math.pi) * np.exp(-x * x))
    x = np.where(y == 1.0, np.inf, np.where(y == -1.0, -np.inf, x))
    return np.where(np.abs(y) > 1.0, np.nan, x)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


_ROUND = {"rn": np.rint, "rz": np.trunc, "rd": np.floor, "ru": np.ceil}
_ERF, _ERFC = _vec(math.erf), _vec(math.erfc)

# libdevice name (rounding suffix removed) -> function of float64 (or integer) arrays.
_FLOAT = {
    "abs": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc, "rint": np.rint,
    "nearbyint": np.rint, "round": _round_half_away, "exp": np.exp, "exp2": np.exp2,
    "exp10": lambda x: np.power(10.0, x), "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1.0 / np.sqrt(x),
    "cbrt": np.cbrt, "rcbrt": lambda x: 1.0 / np.cbrt(x), "rcp": lambda x: 1.0 / x,
    "rcp64h": lambda x: 1.0 / x, "sin": np.sin, "cos": np.cos, "tan": np.tan,
    "sinpi": lambda x: np.sin(np.pi * x), "cospi": lambda x: np.cos(np.pi * x), "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh,
    "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh, "erf": _ERF, "erfc": _ERFC,
    "erfinv": _erfinv, "erfcinv": lambda x: _erfinv(1.0 - x), "erfcx": lambda x: np.exp(x * x) * _ERFC(x),
    "normcdf": lambda x: 0.5 * _ERFC(-x / math.sqrt(2.0)),
    "normcdfinv": lambda x: math.sqrt(2.0) * _erfinv(2.0 * x - 1.0), "lgamma": _vec(_lgamma),
    "tgamma": _vec(_gamma), "cyl_bessel_i0": np.i0, "saturatef": lambda x: np.clip(x, 0.0, 1.0),
    "logb": lambda x: np.floor(np.log2(np.abs(x))), "fast_sinf": np.sin, "fast_cosf": np.cos,
    "fast_tanf": np.tan, "fast_expf": np.exp, "fast_exp10f": lambda x: np.power(10.0, x),
    "fast_logf": np.log, "fast_log2f": np.log2, "fast_log10f": np.log10,
    "div": np.divide, "fast_dividef": np.divide, "add": np.add, "sub": np.subtract, "mul": np.multiply,
    "pow": np.power, "fast_powf": np.power, "atan2": np.arctan2, "hypot": np.hypot,
    "rhypot": lambda x, y: 1.0 / np.hypot(x, y), "fmod": np.fmod,
    "remainder": np.vectorize(math.remainder, otypes=[np.float64]), "copysign": np.copysign,
    "fdim": lambda x, y: np.where(x > y, x - y, 0.0), "nextafter": np.nextafter,
    "ldexp": lambda x, e: np.ldexp(x, e.astype(np.int32)), "scalbn": lambda x, e: np.ldexp(x, e.astype(np.int32)),
    "fma": lambda x, y, z: x * y + z, "norm3d": lambda x, y, z: np.sqrt(x * x + y * y + z * z),
    "rnorm3d": lambda x, y, z: 1.0 / np.sqrt(x * x + y * y + z * z),
    "norm4d": lambda x, y, z, w: np.sqrt(x * x + y * y + z * z + w * w),
    "rnorm4d": lambda x, y, z, w: 1.0 / np.sqrt(x * x + y * y + z * z + w * w),
}  # fmt: skip
_PREDICATE = {"isnan": np.isnan, "isinf": np.isinf, "signbit": np.signbit, "finitef": np.isfinite,
              "isfinited": np.isfinite}
_CONVERSION = re.compile(r"(double|float|u?int|u?ll)2(double|float|u?int|u?ll)(?:_(rn|rz|rd|ru))?")


def _bits(x: np.ndarray) -> int:
    return x.dtype.itemsize * 8


def _integer(name: str, args: list[np.ndarray]) -> np.ndarray | None:
    x = args[0]
    if name == "popc":
        u = x.astype(np.uint64) & np.uint64((1 << _bits(x)) - 1)
        return np.array([bin(int(v)).count("1") for v in u.ravel()]).reshape(x.shape)
    if name == "clz":
        width = _bits(x)
        u = x.astype(np.uint64) & np.uint64((1 << width) - 1)
        return np.array([width - int(v).bit_length() for v in u.ravel()]).reshape(x.shape)
    if name == "ffs":
        u = x.astype(np.uint64) & np.uint64((1 << _bits(x)) - 1)
        return np.array([(int(v) & -int(v)).bit_length() for v in u.ravel()]).reshape(x.shape)
    if name == "brev":
        width = _bits(x)
        u = x.astype(np.uint64) & np.uint64((1 << width) - 1)
        out = [int(format(int(v), f"0{width}b")[::-1], 2) for v in u.ravel()]
        return np.array(out, dtype=np.uint64).reshape(x.shape).view(np.int64).astype(x.dtype)
    if name == "mulhi":
        width = _bits(x)
        out = [(int(a) * int(b)) >> width for a, b in zip(x.ravel(), args[1].ravel())]
        return np.array([v & ((1 << width) - 1) for v in out], dtype=np.uint64).reshape(x.shape)
    if name == "mul24":
        low = lambda v: ((v.astype(np.int64) & 0xFFFFFF) ^ 0x800000) - 0x800000  # noqa: E731
        return low(x) * low(args[1])
    if name == "hadd":
        return (x.astype(np.int64) + args[1].astype(np.int64)) >> 1
    if name == "rhadd":
        return (x.astype(np.int64) + args[1].astype(np.int64) + 1) >> 1
    if name == "sad":
        return np.abs(x.astype(np.int64) - args[1].astype(np.int64)) + args[2].astype(np.int64)
    return None


def _reinterpret(name: str, args: list[np.ndarray], out: np.dtype) -> np.ndarray | None:
    if name in ("int_as_float", "uint_as_float", "float_as_int", "float_as_uint", "longlong_as_double",
                "double_as_longlong"):
        return np.ascontiguousarray(args[0]).view(out)
    if name == "double2loint":
        return (np.ascontiguousarray(args[0]).view(np.uint64) & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)
    if name == "double2hiint":
        return (np.ascontiguousarray(args[0]).view(np.uint64) >> np.uint64(32)).astype(np.uint32).view(np.int32)
    if name == "hiloint2double":
        hi = args[0].astype(np.uint32).astype(np.uint64)
        lo = args[1].astype(np.uint32).astype(np.uint64)
        return ((hi << np.uint64(32)) | lo).view(np.float64)
    return None


def libdevice_numpy(name: str, args: list[np.ndarray], out: np.dtype) -> np.ndarray:
    """Compute libdevice function `name` (as `triton.language.extra.cuda.libdevice` names it) on
    broadcast numpy arrays; the result has numpy dtype `out`."""
    args = [np.asarray(a) for a in args]
    for kind in (_reinterpret, lambda n, a, o: _integer(n, a)):
        value = kind(name, args, out)
        if value is not None:
            return np.asarray(value).astype(out)
    conversion = _CONVERSION.fullmatch(name)
    if conversion:
        value = args[0].astype(np.float64) if args[0].dtype.kind == "f" else args[0]
        if np.dtype(out).kind in "iu" and value.dtype.kind == "f":
            value = _ROUND[conversion.group(3) or "rn"](value)
        return value.astype(out)
    if name in _PREDICATE:
        return _PREDICATE[name](args[0]).astype(out)
    if name in ("llrint", "llround", "ilogb"):
        x = args[0].astype(np.float64)
        value = {"llrint": np.rint, "llround": _round_half_away, "ilogb": lambda v: np.floor(np.log2(np.abs(v)))}[name](x)
        return value.astype(out)
    base = re.sub(r"_(rn|rz|rd|ru)$", "", name)
    fn = _FLOAT.get(base)
    if fn is None:
        raise NotImplementedError(f"libdevice.{name} has no CPU-interpreter counterpart in KernelGym; "
                                  "it runs on a GPU only")
    floats = [a.astype(np.float64) if a.dtype.kind == "f" else a for a in args]
    with np.errstate(all="ignore"):  # inf and nan are results here, as on the GPU
        return np.asarray(fn(*floats)).astype(out)
