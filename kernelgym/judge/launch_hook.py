"""Launches of the answer's own `@triton.jit` kernels: counts (RH-01, RH-02 evidence), the storages
they were handed (the provenance check, RH-02), and GPU semantics the interpreter would waive.

Works for compiled kernels (`JITFunction`) and the CPU interpreter (`InterpretedFunction`);
autotuned/heuristic wrappers end in one of these `run` methods. Runs inside the untrusted child.
Its state lives in this module's globals, not in an object or a closure the wrapper carries: the
answer reaches them only through `sys.modules` or a function's `__globals__`, which the static
rules forbid (no `sys`, `gc`, `inspect`, `getattr`, dunder attributes). That is what the counts
rest on; the provenance verdict itself is computed by the parent from output copies.

Forged pointers: a kernel may reach memory only through the pointers it is handed. Casts between
integers and pointers, pointers stored in memory, and inline assembly would let it read or rewrite
any address of the process (kept outputs, the harness's input sets), so the answer's kernels are
refused when their Triton IR holds one (`forged_pointer_ops`; GPU: read from each compiled kernel
once, after its first launch, which the rejection voids) or when the CPU interpreter is asked to
build one (the interpreter has no IR: its builder refuses the same ops).

Arguments: a GPU launch passes tensors as pointers and scalars, strings and dtypes as values; the
CPU interpreter passes anything else (a list, a dict, an object, a function) into the kernel body
untouched, where Python could run torch on it. So every argument of the answer's launches must be
what a GPU launch takes (`argument_problem`), with no tensor under a `tl.constexpr` at any depth.
"""

from __future__ import annotations

import inspect
import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

_STATE: dict[str, Any] = {"module": None, "record": False}
_COUNTS: Counter[str] = Counter()
_STORAGES: dict[tuple[str, int], Any] = {}  # (device, data_ptr) -> untyped storage a launch was handed
_CONSTEXPR: dict[int, tuple[tuple[int, str], ...]] = {}  # id(python fn) -> (position, name) of constexpr params
_CHECKED: dict[int, Any] = {}  # id(compiled kernel) -> the kernel whose IR passed (held: ids are not reused)
_LOG = logging.getLogger(__name__)

# Triton IR that gives a kernel memory its arguments do not cover, or machine code the IR cannot show.
# ptr_to_int is refused too: an address learnt as an integer reaches any other one by pointer
# arithmetic (`p + (addr - p_addr) // 4`) without an int_to_ptr.
FORGED_POINTER_OPS = {
    "tt.int_to_ptr": "an integer cast to a pointer (`.to(tl.pointer_type(...))`, `.to(ptr.dtype)`, a bitcast)",
    "tt.ptr_to_int": "a pointer cast to an integer (its address can be turned back into a pointer later)",
    "tt.elementwise_inline_asm": "inline assembly (`tl.inline_asm_elementwise`)",
}
NESTED_POINTER = "a pointer to pointers (pointers stored in memory and loaded back in a later call)"
_OP_LINE = re.compile(r'^\s*(?:%[^=\n]*=\s*)?"?(tt\.(?:int_to_ptr|ptr_to_int|elementwise_inline_asm))\b', re.M)
_NESTED_POINTER = re.compile(r"!tt\.ptr<\s*!tt\.ptr<")
# The interpreter builder's methods for the same ops (CPU).
_INTERPRETER_OPS = {"create_int_to_ptr": "tt.int_to_ptr", "create_ptr_to_int": "tt.ptr_to_int",
                    "create_inline_asm": "tt.elementwise_inline_asm"}


class KernelArgumentError(TypeError):
    """An argument of the answer's kernel launch that a GPU launch does not take (`argument_problem`):
    outside the answer contract, so `errors.classify_exception` makes it `invalid_answer`, naming the
    parameter. Under the CPU interpreter such a value reaches the kernel body as the Python object."""


class ConstexprTensorError(KernelArgumentError):
    """A torch tensor passed for a `tl.constexpr` parameter: the interpreter accepts it, a GPU does not."""


class ForgedPointerError(RuntimeError):
    """The answer's kernel forges a pointer or runs inline assembly (`FORGED_POINTER_OPS`): outside the
    answer contract. `errors.classify_exception` makes it `invalid_answer`, not a cheat: Triton's own
    grouped-GEMM tutorial casts a table of `data_ptr()`s back to pointers and fast-math kernels use
    inline PTX, so the construct alone does not prove an attack; the contract reports such constructs
    as invalid answers naming them, so a policy learns the rule instead of being punished as a cheater."""


_SSA = r"%[\w.$-]+"
# A function header: its symbol bare or quoted (Triton mangles a noinline helper's constexpr arguments into
# its name, and a string with a space makes MLIR quote it: red-team v4f).
_SYMBOL = r'@(?:[\w.$-]+|"(?:[^"\\]|\\.)*")'
_FUNC = re.compile(rf"^\s*tt\.func\s+(public\s+|private\s+|nested\s+)?({_SYMBOL})\((.*)$")
_FUNC_WORD = re.compile(r"\btt\.func\b")
_CALL = re.compile(rf"\btt\.call\s+({_SYMBOL})\(([^()]*)\)")
_CALL_WORD = re.compile(r"\btt\.call\b")
_ARG = re.compile(rf"({_SSA})\s*:")
_ARG_NULL_CAST = re.compile(rf"^\s*({_SSA})\s*=\s*tt\.ptr_to_int\s+({_SSA})\s*:\s*!tt\.ptr<[^<>]*>\s*->\s*i64\b")
_ANY_CAST = re.compile(r"\btt\.ptr_to_int\b")
_ZERO_I64 = re.compile(rf"^\s*({_SSA})\s*=\s*arith\.constant\s+0\s*:\s*i64\b")
_NULL_TEST = re.compile(rf"^\s*{_SSA}\s*=\s*arith\.cmpi\s+(?:eq|ne)\s*,\s*({_SSA})\s*,\s*({_SSA})\s*:\s*i64\b")


@dataclass
class _Func:
    """One `tt.func` of a module: SSA names are per function."""

    name: str
    public: bool
    args: list[str]
    body: list[str] = field(default_factory=list)


def _functions(ttir: str) -> list[_Func]:
    """Each `tt.func` of the module, or [] when a header or a call does not read as expected."""
    funcs: list[_Func] = []
    for line in ttir.splitlines():
        head = _FUNC.match(line)
        if (_FUNC_WORD.search(line) and not head) or len(_CALL_WORD.findall(line)) != len(_CALL.findall(line)):
            return []  # a header or call this reading does not understand: no exemption (callers refuse)
        if head:
            funcs.append(_Func(head.group(2), head.group(1) is not None and head.group(1).strip() == "public",
                               _ARG.findall(head.group(3))))
        elif funcs:
            funcs[-1].body.append(line)
    return funcs


def _kernel_pointer(funcs: list[_Func], func: _Func, arg: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether `arg` of `func` is always a public kernel's own pointer argument: it is one, or `func` is a
    (noinline) helper every `tt.call` of which passes, in that place, such an argument of its caller
    (FlagGems' `if ptr:` moved into a helper, red-team v4f). An offset pointer passed anywhere, or a call
    cycle, is not."""
    if func.public:
        return arg in func.args
    if func.name in seen or arg not in func.args:
        return False
    place = func.args.index(arg)
    for caller in funcs:
        for line in caller.body:
            for callee, operands in _CALL.findall(line):
                if callee != func.name:
                    continue
                passed = [o.strip() for o in operands.split(",")] if operands.strip() else []
                if len(passed) <= place or not _kernel_pointer(funcs, caller, passed[place], seen | {func.name}):
                    return False
    return True


def _only_null_tests(ttir: str) -> bool:
    """Every `tt.ptr_to_int` is Triton's lowering of a kernel argument's truthiness (`if weight_ptr:`,
    FlagGems' optional-argument idiom): a scalar pointer argument of the public kernel (or of a helper
    that is always handed one, `_kernel_pointer`) cast to i64 and only compared (eq/ne) with a zero i64
    constant of the same function. Null or not is all that learns. Any other operand can be an offset
    pointer, `x_ptr - k`, whose null test is an equality test of the address: a search over candidate
    offsets finds it (red-team v4f)."""
    funcs = _functions(ttir)
    if not funcs:
        return False
    for func in funcs:
        body = func.body
        zeros = {m.group(1) for m in map(_ZERO_I64.match, body) if m}
        for line in body:
            if not _ANY_CAST.search(line):
                continue
            cast = _ARG_NULL_CAST.match(line)
            if not (cast and _kernel_pointer(funcs, func, cast.group(2))):
                return False
            name = cast.group(1)
            use = re.compile(re.escape(name) + r"(?![\w.$-])")
            for other in body:
                if other is line or not use.search(other):
                    continue
                test = _NULL_TEST.match(other)
                operands = set(test.groups()) if test else set()
                if name not in operands or len(operands) != 2 or not (operands - {name}) <= zeros:
                    return False
    return True


def forged_pointer_ops(ttir: str) -> list[str]:
    """The constructs in Triton IR (TTIR or TTGIR text) by which a kernel reaches memory other than
    through its pointer arguments, each once, in `FORGED_POINTER_OPS` order then the nested pointer.
    A `tt.ptr_to_int` whose results are only tested against zero (a pointer's truthiness) is not one."""
    found = set(_OP_LINE.findall(ttir))
    if "tt.ptr_to_int" in found and _only_null_tests(ttir):
        found.discard("tt.ptr_to_int")
    ops = [op for op in FORGED_POINTER_OPS if op in found]
    if _NESTED_POINTER.search(ttir):
        ops.append("!tt.ptr<!tt.ptr<...>>")
    return ops


def install(module_name: str) -> None:
    """Wrap Triton's launch entry points once; launches of functions defined in `module_name` count."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _STATE["module"] = module_name
    for cls in (JITFunction, InterpretedFunction):
        if not getattr(cls.run, "_kernelgym_hook", False):
            cls.run = _wrap(cls.run)
    refuse_forged_pointers_in_interpreter()


def refuse_forged_pointers_in_interpreter() -> None:
    """Make the CPU interpreter's builder refuse the forged-pointer ops in this process: the in-process
    engine's child and judge v4's replay process, where only answer kernels run interpreted. Triton builds
    these ops only for explicit casts and inline asm."""
    from triton.runtime.interpreter import InterpreterBuilder

    for method, op in _INTERPRETER_OPS.items():
        if not getattr(getattr(InterpreterBuilder, method, None), "_kernelgym_hook", False):
            setattr(InterpreterBuilder, method, _refusing(op))


def _refusing(op: str):  # noqa: ANN202
    def refuse(self, *args, **kwargs):  # noqa: ANN001, ANN202 - mirrors the builder's methods
        raise ForgedPointerError(forged_pointer_text([op]))

    refuse._kernelgym_hook = True
    return refuse


def _wrap(original):  # noqa: ANN001, ANN202
    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202 - mirrors Triton's signature
        fn = getattr(self, "fn", None)
        own = _STATE["module"] is not None and getattr(fn, "__module__", None) == _STATE["module"]
        if own:
            _check_arguments(self, fn, args, kwargs)
        try:
            result = original(self, *args, **kwargs)
        except Exception as e:
            # The interpreter wraps what its builder raised (InterpreterError from ForgedPointerError).
            if own and isinstance(e.__cause__, ForgedPointerError):
                raise ForgedPointerError(f"kernel {fn.__name__}: {e.__cause__}") from None
            raise
        if own:  # counted once it returned: a launch that raises (RH-04 fallbacks) is no evidence
            _reject_forged_pointers(fn, result)
            _COUNTS[fn.__name__] += 1
            if _STATE["record"]:
                _record(args, kwargs)
        return result

    run._kernelgym_hook = True
    return run


def take() -> dict[str, int]:
    """Launch counts since the last call, then reset."""
    counts = dict(_COUNTS)
    _COUNTS.clear()
    return counts


def record_storages(on: bool) -> None:
    """Start (forgetting earlier ones) or stop recording the storages of the answer's kernel arguments.
    Every correctness call records, so none of them differs from the one the parent checks."""
    if on:
        _STORAGES.clear()
    _STATE["record"] = on


def recorded_storages() -> list[Any]:
    """The distinct storages recorded since `record_storages(True)`; forgotten by the next start."""
    return list(_STORAGES.values())


def _record(args: tuple, kwargs: dict) -> None:
    import torch

    for a in (*args, *kwargs.values()):
        base = a if isinstance(a, torch.Tensor) else getattr(a, "base", None)  # TMA descriptors wrap a tensor
        if isinstance(base, torch.Tensor):
            storage = base.untyped_storage()
            _STORAGES.setdefault((str(base.device), storage.data_ptr()), storage)


def _check_arguments(kernel: Any, fn: Any, args: tuple, kwargs: dict) -> None:
    """Refuse a launch of the answer's kernel with an argument a GPU launch does not take (positional
    or keyword, values heuristics added included; launch options such as `num_warps` are Triton's)."""
    _reject_constexpr_tensors(kernel, fn, args, kwargs)
    names = _param_names(kernel, fn)
    bound = dict(zip(names, args)) | {k: v for k, v in kwargs.items() if k in names}
    constexpr = {name for _, name in _constexpr_params(kernel, fn)}
    for name, value in bound.items():
        problem = argument_problem(value, name, name in constexpr)
        if problem is not None:
            raise KernelArgumentError(
                f"kernel {fn.__name__}: argument {name!r} {problem}; a Triton launch takes only torch tensors, "
                "ints, floats, bools, None, strings, Triton dtypes, tl.constexpr values, TensorDescriptors and "
                "tuples of these, with no tensor in a tl.constexpr")


def argument_problem(value: Any, where: str, constexpr: bool = False) -> str | None:
    """Why `value` (the argument, or the part of it at `where`) cannot be a kernel argument, or None
    when a GPU launch takes it. `constexpr`: it is (inside) a `tl.constexpr` parameter's value."""
    import torch
    import triton.language as tl

    kind = type(value)
    at = "" if where.isidentifier() else f" at {where}"
    if value is None or kind in (bool, int, float, str):
        return None
    if kind in (torch.Tensor, torch.nn.Parameter):
        return f"holds a torch.Tensor{at} inside a tl.constexpr (a GPU does not compile it)" if constexpr else None
    if kind in (tuple, torch.Size):
        problems = (argument_problem(item, f"{where}[{i}]", constexpr) for i, item in enumerate(value))
        return next((p for p in problems if p is not None), None)
    if kind.__module__.startswith("triton."):  # Triton's own classes, not answer subclasses of them
        if isinstance(value, tl.constexpr):  # a wrapper: what it wraps is the argument
            return argument_problem(value.value, f"{where}.value", True)
        if isinstance(value, tl.dtype):
            return None
        if kind.__name__ in ("TensorWrapper", "TensorDescriptor"):  # triton.reinterpret(...), TMA descriptors
            if constexpr:
                return f"holds a {kind.__name__}{at} inside a tl.constexpr (a GPU does not compile it)"
            return _wrapped_tensor_problem(value, where)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    return f"is a {name}{at}"


def _wrapped_tensor_problem(value: Any, where: str) -> str | None:
    import torch

    base = getattr(value, "base", None)
    if type(base) not in (torch.Tensor, torch.nn.Parameter):
        return f"wraps a {type(base).__name__} at {where}.base, not a torch.Tensor"
    for field in ("shape", "strides", "block_shape"):
        for i, item in enumerate(getattr(value, field, None) or ()):
            if type(item) is not int:
                return f"has a {type(item).__name__} at {where}.{field}[{i}], not an int"
    return None


def _reject_constexpr_tensors(kernel: Any, fn: Any, args: tuple, kwargs: dict) -> None:
    """On a GPU a tensor for a `tl.constexpr` parameter does not compile; the interpreter takes it
    and the kernel reads it as an array. The CPU path judges GPU semantics, so it fails here too."""
    import torch

    params = _constexpr_params(kernel, fn)
    for pos, name in params:
        value = args[pos] if pos < len(args) else kwargs.get(name)
        if isinstance(value, torch.Tensor):
            raise ConstexprTensorError(
                f"kernel {fn.__name__}: argument {name!r} is a tl.constexpr but got a torch.Tensor; on a GPU "
                "this does not compile (constexpr values must be Python ints, floats, bools or strings)")


def _reject_forged_pointers(fn: Any, compiled: Any) -> None:
    """GPU only: `JITFunction.run` returns the compiled kernel, whose IR is read once per kernel
    object. The interpreter returns no compiled kernel (its builder refuses the ops instead)."""
    asm = getattr(compiled, "asm", None)
    if asm is None or _CHECKED.get(id(compiled)) is compiled:
        return
    ir = _ir_text(asm)
    if ir is None:  # a Triton that keeps neither TTIR nor TTGIR: say so rather than refuse every answer
        _LOG.warning("kernel %s: no Triton IR on the compiled kernel; forged-pointer check skipped",
                     getattr(fn, "__name__", "?"))
    else:
        ops = forged_pointer_ops(ir)
        if ops:
            raise ForgedPointerError(f"kernel {fn.__name__}: {forged_pointer_text(ops)}")
    _CHECKED[id(compiled)] = compiled


def forged_pointer_message(compiled: Any) -> str | None:
    """What a compiled kernel's IR does outside the contract (forged pointers, inline asm), or None;
    None too when there is no IR to read (the interpreter's launches)."""
    asm = getattr(compiled, "asm", None)
    ir = _ir_text(asm) if asm is not None else None
    ops = forged_pointer_ops(ir) if ir else []
    return forged_pointer_text(ops) if ops else None


def _ir_text(asm: Any) -> str | None:
    getter = getattr(asm, "get", None)
    if getter is None:
        return None
    for key in ("ttir", "ttgir"):  # dict.get: AsmDict's __missing__ (which disassembles) is not called
        text = getter(key)
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if isinstance(text, str) and text:
            return text
    return None


def forged_pointer_text(ops: list[str]) -> str:
    """The refusal's text for `forged_pointer_ops`' findings (one wording on GPU and CPU)."""
    what = "; ".join(FORGED_POINTER_OPS.get(op, NESTED_POINTER) + f" [{op}]" for op in ops)
    return (f"{what}: outside the answer contract; a kernel may reach memory only through the pointers it is "
            "passed (with offsets), and may not run inline assembly")


def _param_names(kernel: Any, fn: Any) -> list[str]:
    """The kernel's parameter names: Triton's own lists (`arg_names`, then `params`), else the signature."""
    names = getattr(kernel, "arg_names", None)
    if names is None and getattr(kernel, "params", None) is not None:
        names = [p.name for p in kernel.params]
    return list(names) if names is not None else list(inspect.signature(fn).parameters)


def _constexpr_params(kernel: Any, fn: Any) -> tuple[tuple[int, str], ...]:
    key = id(fn)
    if key not in _CONSTEXPR:
        params = getattr(kernel, "params", None)  # JITFunction: Triton's own KernelParam list
        if params is not None:
            found = tuple((i, p.name) for i, p in enumerate(params) if p.is_constexpr)
        else:  # InterpretedFunction: the same test Triton's KernelParam makes on the annotation
            found = tuple((i, p.name) for i, p in enumerate(inspect.signature(fn).parameters.values())
                          if "constexpr" in _annotation_name(p.annotation))
        _CONSTEXPR[key] = found
    return _CONSTEXPR[key]


def _annotation_name(annotation: Any) -> str:
    if annotation is inspect.Parameter.empty:
        return ""
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", repr(annotation))
