"""Record launches of the answer's own `@triton.jit` kernels (RH-01, RH-02 evidence).

Works for compiled kernels (`JITFunction`) and the CPU interpreter (`InterpretedFunction`);
autotuned/heuristic wrappers end in one of these `run` methods. Runs inside the untrusted child,
so it is an early reject only: on a GPU the profiler's kernel table is the stronger evidence.
"""

from __future__ import annotations

from collections import Counter


class LaunchRecorder:
    """Counts launches of kernels whose Python function lives in module `module_name`."""

    def __init__(self, module_name: str) -> None:
        self.module_name = module_name
        self.counts: Counter[str] = Counter()

    def install(self) -> None:
        from triton.runtime.interpreter import InterpretedFunction
        from triton.runtime.jit import JITFunction

        for cls in (JITFunction, InterpretedFunction):
            self._wrap(cls)

    def _wrap(self, cls: type) -> None:
        original = cls.run
        recorder = self

        def run(self, *args, **kwargs):  # noqa: ANN001 - mirrors Triton's signature
            fn = getattr(self, "fn", None)
            if getattr(fn, "__module__", None) == recorder.module_name:
                recorder.counts[fn.__name__] += 1
            return original(self, *args, **kwargs)

        cls.run = run

    def take(self) -> dict[str, int]:
        """Launch counts since the last call, then reset."""
        counts = dict(self.counts)
        self.counts.clear()
        return counts
