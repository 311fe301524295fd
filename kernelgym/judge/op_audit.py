"""Which torch operators a forward ran outside the answer's own kernels (RH-01 at run time).

The static contract forbids torch compute outside kernels; this is its run-time twin, so that a
route the static rules miss is still seen, on the CPU too (where no profile exists and a "token"
copy kernel would otherwise carry torch's result past the provenance check). During correctness
calls the child enters a trusted `TorchDispatchMode` that counts every aten operator; only Triton's
own machinery is paused: a kernel launch (the interpreter's argument copies included) and the
benchmarker autotune times configs with. Whatever the answer hands Triton to call is its own code
and stays counted: heuristics' value functions, autotune's hooks, pruning and performance model,
the launch grid, and the function a benchmarker runs. What forward may run is an allowlist:
allocation, views, metadata and layout copies (`.contiguous()` of a view; GPU profiles see their
time). Anything else is arithmetic the answer did with torch.

Runs in the child, so it is a harness observation: the contract keeps answer code from reaching
dispatch modes (`torch.utils`, `torch._C`, `torch.overrides` and dunders are outside it), and the
child refuses to report while a mode it did not enter is active.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

# aten overload packets forward may run: allocation, views, metadata, layout copies.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "new_empty", "new_empty_strided", "new_zeros", "new_ones", "new_full", "arange", "zero_", "fill_", "scalar_tensor",
    "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "t", "transpose", "permute", "expand",
    "unsqueeze", "squeeze", "slice", "select", "narrow", "split", "split_with_sizes", "chunk", "unbind", "detach",
    "alias", "lift_fresh", "unfold", "diagonal", "movedim", "view_as", "expand_as", "flatten", "unflatten",
    "clone", "copy_", "contiguous", "is_contiguous", "sym_size", "sym_stride", "sym_numel", "sym_storage_offset",
    "size", "stride", "numel", "dim", "is_same_size", "_has_compatible_shallow_copy_type", "detach_",
    "requires_grad_",
})  # fmt: skip

_OPS: Counter[str] = Counter()
_STATE = {"paused": 0, "active": False}


def _mode_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Audit(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN202
            if not _STATE["paused"]:
                _OPS[func.overloadpacket.__name__] += 1
            return func(*args, **(kwargs or {}))

    return _Audit


_MODE: list[Any] = []


@contextlib.contextmanager
def recording() -> Iterator[None]:
    """Count the aten operators run inside the block (forgetting earlier counts)."""
    if not _MODE:
        _MODE.append(_mode_class())
    _OPS.clear()
    _STATE["active"] = True
    try:
        with _MODE[0]():
            yield
    finally:
        _STATE["active"] = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Triton's own work (a launch, a benchmarker's timing) is not the answer's torch compute."""
    _STATE["paused"] += 1
    try:
        yield
    finally:
        _STATE["paused"] -= 1


@contextlib.contextmanager
def resumed() -> Iterator[None]:
    """Answer code Triton calls from inside its paused machinery (a grid, a benchmarked function)."""
    depth, _STATE["paused"] = _STATE["paused"], 0
    try:
        yield
    finally:
        _STATE["paused"] = depth


def forbidden() -> dict[str, int]:
    """Operators outside `ALLOWED_OPS` counted by the last `recording()`, with their counts."""
    return {name: n for name, n in sorted(_OPS.items()) if name not in ALLOWED_OPS}


# Triton's benchmarkers, wherever a Triton version binds them (autotune asks `driver.active` for
# `triton.testing.do_bench` when it times; older versions imported it into the autotuner module).
_BENCHMARKERS = (("triton.testing", "do_bench"), ("triton.testing", "do_bench_cudagraph"),
                 ("triton.runtime.autotuner", "do_bench"))


# Ways to read a tensor's values on the host that run no aten operator under a dispatch mode (printing
# disables the active modes; `tolist`, `numpy` and storage reads copy memory directly). An answer
# that reads its inputs this way can compute the task in host Python and write it with `fill_`:
# counted as pseudo-operators outside `ALLOWED_OPS`. `item()`, `float(t)` and `int(t)` dispatch
# `_local_scalar_dense` and are counted already.
_HOST_READS = (
    ("torch._tensor_str", None, "_str", "host read of values (str/repr/format/print)"),
    ("torch", "Tensor", "tolist", "host read of values (tolist)"),
    ("torch", "Tensor", "numpy", "host read of values (numpy)"),
    ("torch", "Tensor", "__array__", "host read of values (__array__)"),
    ("torch", "UntypedStorage", "tolist", "host read of values (storage)"),
    ("torch", "UntypedStorage", "__getitem__", "host read of values (storage)"),
    ("torch.storage", "TypedStorage", "tolist", "host read of values (storage)"),
    ("torch.storage", "TypedStorage", "__getitem__", "host read of values (storage)"),
)


def guard_host_reads() -> None:
    """Count the host reads of `_HOST_READS` while recording (not while paused: Triton's launch path
    and the harness's own reports may read values). Installed once in the child before the answer
    is imported; answers cannot reach the patched attributes (dunders, `setattr` and `torch._*` are
    outside the contract)."""
    import importlib

    for module_name, cls_name, attr, label in _HOST_READS:
        owner = importlib.import_module(module_name)
        if cls_name is not None:
            owner = getattr(owner, cls_name, None)
        original = getattr(owner, attr, None) if owner is not None else None
        if original is None or getattr(original, "_kernelgym_host_read", False):
            continue
        setattr(owner, attr, _counting(original, label))


def _counting(original, label: str):  # noqa: ANN001, ANN202
    def read(*args, **kwargs):  # noqa: ANN202 - mirrors the wrapped function
        if _STATE["active"] and not _STATE["paused"]:
            _OPS[label] += 1
        return original(*args, **kwargs)

    read._kernelgym_host_read = True
    return read


def pause_triton_entry_points() -> None:
    """Pause recording inside Triton's own machinery only (module docstring), whoever the caller is:
    `JITFunction.run` and `InterpretedFunction.run` (the answer's grid callable is resumed inside),
    and Triton's benchmarkers (the function they time is resumed inside). `Heuristics.run` and
    `Autotuner.run` stay recorded: the value functions, hooks and pruning they call are answer code."""
    import importlib

    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (JITFunction, InterpretedFunction):
        if not getattr(cls.run, "_kernelgym_paused", False):
            cls.run = _paused_launch(cls.run)
    for module_name, name in _BENCHMARKERS:
        module = importlib.import_module(module_name)
        bench = getattr(module, name, None)
        if callable(bench) and not getattr(bench, "_kernelgym_paused", False):
            setattr(module, name, _paused_benchmarker(bench))


def _paused_launch(original):  # noqa: ANN001, ANN202
    def run(self, *args, **kwargs):  # noqa: ANN001, ANN202 - mirrors Triton's `run(*args, grid, warmup, **kwargs)`
        grid = kwargs.get("grid")
        if callable(grid):
            kwargs["grid"] = _resumed_call(grid)
        with paused():
            return original(self, *args, **kwargs)

    run._kernelgym_paused = True
    return run


def _paused_benchmarker(bench):  # noqa: ANN001, ANN202
    def benchmark(fn, *args, **kwargs):  # noqa: ANN001, ANN202 - mirrors `do_bench(fn, ...)`
        with paused():
            return bench(_resumed_call(fn), *args, **kwargs)

    benchmark._kernelgym_paused = True
    return benchmark


def _resumed_call(fn):  # noqa: ANN001, ANN202
    def call(*args, **kwargs):  # noqa: ANN202
        with resumed():
            return fn(*args, **kwargs)

    return call
