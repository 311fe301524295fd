"""Launches of the answer's own `@triton.jit` kernels: counts (RH-01, RH-02 evidence), the storages
they were handed (the provenance check, RH-02), and GPU semantics the interpreter would waive.

Works for compiled kernels (`JITFunction`) and the CPU interpreter (`InterpretedFunction`);
autotuned/heuristic wrappers end in one of these `run` methods. Runs inside the untrusted child.
Its state lives in this module's globals, not in an object or a closure the wrapper carries: the
answer reaches them only through `sys.modules` or a function's `__globals__`, which the static
rules forbid (no `sys`, `gc`, `inspect`, `getattr`, dunder attributes). That is what the counts
rest on; the provenance verdict itself is computed by the parent from output copies.
"""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any

_STATE: dict[str, Any] = {"module": None, "record": False}
_COUNTS: Counter[str] = Counter()
_STORAGES: dict[tuple[str, int], Any] = {}  # (device, data_ptr) -> untyped storage a launch was handed
_CONSTEXPR: dict[int, tuple[tuple[int, str], ...]] = {}  # id(python fn) -> (position, name) of constexpr params


class ConstexprTensorError(TypeError):
    """A torch tensor passed for a `tl.constexpr` parameter: the interpreter accepts it, a GPU does not."""


def install(module_name: str) -> None:
    """Wrap Triton's launch entry points once; launches of functions defined in `module_name` count."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _STATE["module"] = module_name
    for cls in (JITFunction, InterpretedFunction):
        if not getattr(cls.run, "_kernelgym_hook", False):
            cls.run = _wrap(cls.run)


def _wrap(original):  # noqa: ANN001, ANN202
    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202 - mirrors Triton's signature
        fn = getattr(self, "fn", None)
        own = _STATE["module"] is not None and getattr(fn, "__module__", None) == _STATE["module"]
        if own:
            _reject_constexpr_tensors(self, fn, args, kwargs)
        result = original(self, *args, **kwargs)
        if own:  # counted once it returned: a launch that raises (RH-04 fallbacks) is no evidence
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
