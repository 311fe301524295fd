"""Write one answer for a generated task: walk its op chain, group ops into kernels as the drawn
style says, let each op family's emitter write its kernels, and render `ModelNew`."""

from __future__ import annotations

import ast
import random
from typing import Any

from kernelgym.coldstart.emit_pointwise import POINTWISE, emit_elementwise
from kernelgym.coldstart.emitters import EMITTERS, EPILOGUE_OPS, UnsupportedOp
from kernelgym.coldstart.program import OpCall, Program, Style, op_calls

__all__ = ["UnsupportedOp", "supported", "write_answer"]


def supported(candidate: Any) -> bool:
    """Whether every op of the chain has a writer."""
    return all(step.op in POINTWISE or step.op in EMITTERS for step in candidate.steps)


def write_answer(candidate: Any, style: Style | None = None, seed: int = 0) -> str:
    """The answer's source for `candidate` (a `kernelgym.taskgen.compose.Candidate`).
    Raises `UnsupportedOp` when an op has no writer."""
    style = style or Style.draw(random.Random(seed))
    calls = op_calls(candidate)
    missing = [c.op for c in calls if c.op not in POINTWISE and c.op not in EMITTERS]
    if missing:
        raise UnsupportedOp(f"no writer for {', '.join(sorted(set(missing)))}")
    init_params, forward_params = _signatures(candidate.source)
    prog = Program(candidate.dtype, style)
    x = "x"
    i = 0
    while i < len(calls):
        call = calls[i]
        if call.op in POINTWISE:
            run = _pointwise_run(calls, i) if style.fuse_pointwise else [call]
            x = emit_elementwise(run, x, prog)
            i += len(run)
            continue
        epilogue: list[OpCall] = []
        if style.fuse_epilogue and call.op in EPILOGUE_OPS:
            epilogue = _pointwise_run(calls, i + 1) if i + 1 < len(calls) and calls[i + 1].op in POINTWISE else []
        x = EMITTERS[call.op](call, x, prog, epilogue)
        i += 1 + len(epilogue)
    if prog.root(x) in forward_params:
        x = _copy(calls[-1], x, prog)  # only views: the output must still be written by a kernel
    init_lines = [line for step in candidate.steps for line in step.init]
    if init_lines and candidate.dtype != "float32":
        init_lines.append(f"self.to(torch.{candidate.dtype})")
    return prog.render(init_params, init_lines, forward_params, x)


def _pointwise_run(calls: list[OpCall], start: int) -> list[OpCall]:
    run = []
    for call in calls[start:]:
        if call.op not in POINTWISE:
            break
        run.append(call)
    return run


def _copy(call: OpCall, x: str, prog: Program) -> str:
    """A copy kernel (a pointwise run of nothing) so that the output is the answer's own."""
    from kernelgym.coldstart.emit_pointwise import emit_copy

    return emit_copy(x, prog)


def _signatures(source: str) -> tuple[list[str], list[str]]:
    """(Model.__init__ parameters, Model.forward parameters), `self` left out."""
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            methods = {f.name: f for f in node.body if isinstance(f, ast.FunctionDef)}
            init = [a.arg for a in methods["__init__"].args.args[1:]]
            forward = [a.arg for a in methods["forward"].args.args[1:]]
            return init, forward
    raise ValueError("task source has no class Model")
