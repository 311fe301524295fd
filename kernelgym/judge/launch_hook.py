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
        self.ghost = False  # when set, launches of the answer's kernels are skipped (RH-02 replay)

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
            own = getattr(fn, "__module__", None) == recorder.module_name
            if own and recorder.ghost:
                return None  # ghost replay: the answer's kernels do nothing
            result = original(self, *args, **kwargs)
            if own:  # counted once it returned: a launch that raises (RH-04 fallbacks) is no evidence
                recorder.counts[fn.__name__] += 1
            return result

        cls.run = run

    def take(self) -> dict[str, int]:
        """Launch counts since the last call, then reset."""
        counts = dict(self.counts)
        self.counts.clear()
        return counts
