"""Which writer handles which op: the registry of the non-pointwise op families.

An emitter is `emit(call, x, prog, epilogue) -> variable`: it appends the kernels and the launcher
for `call` to `prog`, applied to the forward variable `x`, and returns the variable holding the
result. `epilogue` is a run of pointwise ops that follows the op; only ops in `EPILOGUE_OPS` are
ever handed a non-empty one, and they must apply it before their store.
"""

from __future__ import annotations

from collections.abc import Callable

from kernelgym.coldstart.program import OpCall, Program, UnsupportedOp

__all__ = ["EMITTERS", "EPILOGUE_OPS", "Emitter", "UnsupportedOp"]
Emitter = Callable[[OpCall, str, Program, list[OpCall]], str]

EMITTERS: dict[str, Emitter] = {}
EPILOGUE_OPS: set[str] = set()


def _register() -> None:
    import importlib

    for module in ("emit_rows", "emit_losses", "emit_norms", "emit_pool", "emit_matmul", "emit_conv", "emit_shape"):
        try:
            mod = importlib.import_module(f"kernelgym.coldstart.{module}")
        except ModuleNotFoundError as e:
            if e.name != f"kernelgym.coldstart.{module}":
                raise
            continue
        EMITTERS.update(mod.EMITTERS)
        EPILOGUE_OPS.update(getattr(mod, "EPILOGUE_OPS", ()))


_register()
