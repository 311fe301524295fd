"""Which torch operators a forward ran outside the answer's own kernels (RH-01 at run time).

The static contract forbids torch compute outside kernels; this is its run-time twin, so that a
route the static rules miss is still seen, on the CPU too (where no profile exists and a "token"
copy kernel would otherwise carry torch's result past the provenance check). During correctness
calls the child enters a trusted `TorchDispatchMode` that counts every aten operator; launches of
Triton kernels (and Triton's own autotuning and interpreter bookkeeping) are paused. What forward
may run is an allowlist: allocation, views, metadata and layout copies (`.contiguous()` of a view;
GPU profiles see their time). Anything else is arithmetic the answer did with torch.

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
    """Triton's own work (a launch, an autotuning sweep) is not the answer's torch compute."""
    _STATE["paused"] += 1
    try:
        yield
    finally:
        _STATE["paused"] -= 1


def forbidden() -> dict[str, int]:
    """Operators outside `ALLOWED_OPS` counted by the last `recording()`, with their counts."""
    return {name: n for name, n in sorted(_OPS.items()) if name not in ALLOWED_OPS}


def pause_triton_entry_points() -> None:
    """Pause recording inside every Triton entry point an answer's kernel goes through
    (autotuner, heuristics, jit and interpreter launches), whoever the caller is."""
    from triton.runtime.autotuner import Autotuner, Heuristics
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    for cls in (Autotuner, Heuristics, JITFunction, InterpretedFunction):
        original = cls.run
        if getattr(original, "_kernelgym_paused", False):
            continue

        def run(self, *args, _original=original, **kwargs):  # noqa: ANN001, ANN202
            with paused():
                return _original(self, *args, **kwargs)

        run._kernelgym_paused = True
        cls.run = run
