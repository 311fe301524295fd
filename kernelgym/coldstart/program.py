"""The pieces a cold-start answer is assembled from: the op calls of a generated task, the style
choices drawn for one answer, and `Program`, which collects kernels, launcher functions and
forward lines and renders them as one answer module.

An emitter (one per op family, `emit_*.py`) reads an `OpCall` and appends to a `Program`:
`add_kernel` for `@triton.jit` sources, `add_function` for module-level launchers, `call` for
the forward line that runs a launcher. Names are de-duplicated here so that two ops of the same
family share one kernel when their sources are equal and get distinct names otherwise.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from kernelgym.taskgen.ops import OPS_BY_NAME, Shape


class UnsupportedOp(ValueError):
    """An op of the chain (or a shape of it) has no writer."""


@dataclass(frozen=True)
class OpCall:
    """One op of a generated chain, as the emitter needs it (the source line is not re-parsed).

    `k` names what the op owns in the task: layers are `self.<kind>{k}` (`module`), extra inputs
    are forward parameters (`inputs`: `y{k}`, `t{k}`), the bias parameter is `self.bias{k}`.
    Shapes are symbolic; an answer reads the real sizes from its tensors (hidden variants shrink them).
    """

    op: str
    k: int
    shape_in: Shape
    shape_out: Shape
    args: dict[str, Any]
    inputs: tuple[str, ...]
    module: str
    dtype: str

    @property
    def category(self) -> str:
        return OPS_BY_NAME[self.op].category

    @property
    def rank(self) -> int:
        return len(self.shape_in)


@dataclass(frozen=True)
class PointwiseExpr:
    """A pointwise op as statements on the fp32 value `v`.

    `lines` may use the placeholders `{offs}` (flat index into a contiguous tensor of the op's
    shape), `{mask}`, `{col}` (index along the last dim) and `{chan}` (index along dim 1 of a
    rank-4 tensor), so the same op can sit in an elementwise kernel or in a matmul's epilogue.
    `ptrs` are extra pointer parameters: (kernel parameter name, forward expression of the tensor).
    `helpers` are `@triton.jit` device functions the lines call (name, source).
    """

    lines: tuple[str, ...]
    ptrs: tuple[tuple[str, str], ...] = ()
    needs: frozenset[str] = frozenset()
    helpers: tuple[tuple[str, str], ...] = ()


WARPS = (1, 2, 4, 4, 8)
BLOCKS_1D = (128, 256, 512, 1024, 1024, 2048)


@dataclass
class Style:
    """The choices one answer draws, so a model sees many correct ways to write the same thing."""

    rng: random.Random
    fuse_pointwise: bool = True  # a run of pointwise ops becomes one kernel
    fuse_epilogue: bool = True  # pointwise ops after a matmul/row kernel join its epilogue
    autotune: bool = False  # elementwise kernels are autotuned over block sizes
    helper_jit: bool = False  # pointwise math lives in @triton.jit helper functions
    block: int = 1024
    warps: int = 4
    comments: bool = True

    @classmethod
    def draw(cls, rng: random.Random) -> "Style":
        return cls(rng=rng, fuse_pointwise=rng.random() < 0.75, fuse_epilogue=rng.random() < 0.6,
                   autotune=rng.random() < 0.2, helper_jit=rng.random() < 0.3, block=rng.choice(BLOCKS_1D),
                   warps=rng.choice(WARPS), comments=rng.random() < 0.7)

    def pick(self, choices: tuple[Any, ...]) -> Any:
        return self.rng.choice(choices)


@dataclass
class Program:
    """One answer under construction."""

    dtype: str
    style: Style
    kernels: dict[str, str] = field(default_factory=dict)  # name -> source (kernels and jit helpers)
    functions: dict[str, str] = field(default_factory=dict)  # name -> source of module-level launchers
    forward: list[str] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)
    bases: dict[str, str] = field(default_factory=dict)  # view variable -> the variable whose memory it shares
    _vars: int = 0

    def add_kernel(self, name: str, source: str) -> str:
        """Add a module-level `@triton.jit` source whose function is called `name`; returns the name
        it got (the same source added twice is kept once; a different source gets a suffix)."""
        return _add(self.kernels, name, source)

    def add_function(self, name: str, source: str) -> str:
        """Add a module-level Python launcher `def name(...)`; naming as in `add_kernel`."""
        return _add(self.functions, name, source)

    def call(self, function: str, args: list[str]) -> str:
        """Append `h<i> = function(args...)` to forward and return the new variable."""
        self._vars += 1
        var = f"h{self._vars}"
        self.forward.append(f"{var} = {function}({', '.join(args)})")
        return var

    def view(self, x: str, expr: str) -> str:
        """Append `h<i> = <expr>` where `expr` is a view of `x` (`{x}` in `expr` stands for it)."""
        self._vars += 1
        var = f"h{self._vars}"
        self.forward.append(f"{var} = {expr.format(x=x)}")
        self.bases[var] = self.root(x)
        return var

    def root(self, x: str) -> str:
        """The variable whose memory `x` is a view of (`x` itself if it is no view)."""
        return self.bases.get(x, x)

    def render(self, init_params: list[str], init_lines: list[str], forward_params: list[str], result: str,
               docstring: str = "") -> str:
        """The answer module: imports, kernels, launchers, and `ModelNew` (same constructor arguments
        and the same layers, created in the same order, as the task's `Model`)."""
        head = ["import torch", "import torch.nn as nn", "import triton", "import triton.language as tl"]
        head += sorted(self.imports)
        parts = ["\n".join(([f'"""{docstring}"""'] if docstring else []) + head)]
        parts += [src.strip() for src in self.kernels.values()]
        parts += [src.strip() for src in self.functions.values()]
        init = ["super().__init__()", *init_lines] or ["super().__init__()"]
        cls = [
            "class ModelNew(nn.Module):",
            f"    def __init__({', '.join(['self', *init_params])}):",
            *(f"        {line}" for line in init),
            "",
            f"    def forward({', '.join(['self', *forward_params])}):",
            *(f"        {line}" for line in self.forward),
            f"        return {result}",
        ]
        parts.append("\n".join(cls))
        return "\n\n\n".join(parts) + "\n"


def _add(table: dict[str, str], name: str, source: str) -> str:
    for existing, src in table.items():
        if _rename(src, existing, name) == source:
            return existing
    final, i = name, 1
    while final in table:
        i += 1
        final = f"{name}_{i}"
    table[final] = _rename(source, name, final)
    return final


def _rename(source: str, old: str, new: str) -> str:
    return source if old == new else re.sub(rf"\b{re.escape(old)}\b", new, source)


def op_calls(candidate: Any) -> list[OpCall]:
    """The `OpCall`s of a composed candidate (`kernelgym.taskgen.compose.Candidate`), in order."""
    calls, shape = [], candidate.start
    for k, step in enumerate(candidate.steps):
        module = ""
        for line in step.init:
            m = re.match(r"(self\.\w+) = nn\.", line)
            if m:
                module = m.group(1)
        calls.append(OpCall(op=step.op, k=k, shape_in=shape, shape_out=step.out, args=dict(step.args),
                            inputs=tuple(i.name for i in step.inputs), module=module, dtype=candidate.dtype))
        shape = step.out
    return calls
