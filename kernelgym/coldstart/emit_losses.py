"""Per-sample losses over the last dim (mse, l1, smooth_l1, huber, bce_with_logits, kl_div,
cosine, cross_entropy), built from the row kernels of `emit_rows`: one program per row walks x
(and the target) in BLOCK chunks and stores one fp32-computed value per row.

Each matches torch's definition: smooth_l1 with beta 1, huber with delta 0.5 (summed), BCE with
logits as max(x, 0) - x t + log(1 + exp(-|x|)), kl_div as sum(xlogy(t, t) - t log_softmax(x))
(t = 0 contributes 0), cosine as 1 - x.t / (max(|x|, eps) max(|t|, eps)) with eps 1e-8, cross
entropy as logsumexp(x) - x[target].
"""

from __future__ import annotations

from kernelgym.coldstart.emit_rows import LSE_VARIANTS, LSE_WHOLE, Pass, RowSpec, _lse_passes, emit_row_op
from kernelgym.coldstart.program import OpCall, Program

COSINE_EPS = 1e-8


def _elementwise_loss(op: str) -> tuple[str, tuple[str, ...]]:
    """(the per-element loss of `x` and `t` as an expression, its lines computing `e`)."""
    if op == "mse_loss":
        return "(x - t) * (x - t)", ("d = x - t", "e = d * d")
    if op == "l1_loss":
        return "tl.abs(x - t)", ("e = tl.abs(x - t)",)
    if op == "smooth_l1_loss":
        return ("tl.where(tl.abs(x - t) < 1.0, 0.5 * (x - t) * (x - t), tl.abs(x - t) - 0.5)",
                ("d = tl.abs(x - t)", "e = tl.where(d < 1.0, 0.5 * d * d, d - 0.5)"))
    if op == "huber_loss":
        return ("tl.where(tl.abs(x - t) < 0.5, 0.5 * (x - t) * (x - t), 0.5 * (tl.abs(x - t) - 0.25))",
                ("d = tl.abs(x - t)", "e = tl.where(d < 0.5, 0.5 * d * d, 0.5 * (d - 0.25))"))
    if op == "bce_with_logits":
        # masked lanes (x = t = 0) would add log 2: zero them
        return ("tl.where(mask, tl.maximum(x, 0.0) - x * t + tl.log(1.0 + tl.exp(-tl.abs(x))), 0.0)",
                ("e = tl.maximum(x, 0.0) - x * t + tl.log(1.0 + tl.exp(-tl.abs(x)))", "e = tl.where(mask, e, 0.0)"))
    raise KeyError(op)


REDUCE = {"mse_loss": "mean", "l1_loss": "mean", "smooth_l1_loss": "mean", "huber_loss": "sum",
          "bce_with_logits": "mean"}
COMMENTS = {"mse_loss": "mean of (x - t)^2", "l1_loss": "mean of |x - t|",
            "smooth_l1_loss": "mean of smooth L1 (beta 1)", "huber_loss": "sum of Huber (delta 0.5)",
            "bce_with_logits": "mean of BCE with logits, max(x,0) - x t + log(1 + exp(-|x|))"}


def loss_spec(call: OpCall, prog: Program) -> tuple[RowSpec, tuple[tuple[str, str], ...]]:
    rng = prog.style.rng
    op = call.op
    if op in REDUCE:
        result = "tl.sum(acc, axis=0)" + (" / N" if REDUCE[op] == "mean" else "")
        expr, lines = _elementwise_loss(op)
        helpers: tuple[tuple[str, str], ...] = ()
        if prog.style.helper_jit:
            helper = f"{op}_elem"
            src = "\n".join(["@triton.jit", f"def {helper}(x, t, mask):", *(f"    {ln}" for ln in lines), "    return e"])
            helpers = ((helper, src),)
            body = (f"acc += {helper}(x, t, mask)",)
        elif rng.random() < 0.5:
            body = (f"acc += {expr}",)
        else:
            body = (*lines, "acc += e")
        return RowSpec((Pass(init=("acc = tl.zeros([BLOCK], dtype=tl.float32)",), body=body),), result=result,
                       target="row", comment=COMMENTS[op]), helpers
    if op == "kl_div":
        passes = _lse_passes(rng.choice(LSE_VARIANTS))
        final = Pass(init=("lse = m + tl.log(s)", "acc = tl.zeros([BLOCK], dtype=tl.float32)"),
                     body=("xlogy = tl.where(t > 0.0, t * tl.log(t), 0.0)", "acc += xlogy - t * (x - lse)"))
        return RowSpec((*passes, final), result="tl.sum(acc, axis=0)", target="row",
                       comment="sum of t log t - t log_softmax(x): logsumexp pass, then the sum",
                       whole=(LSE_WHOLE, final)), ()
    if op == "cosine_loss":
        p = Pass(init=("dot = tl.zeros([BLOCK], dtype=tl.float32)", "xx = tl.zeros([BLOCK], dtype=tl.float32)",
                       "tt = tl.zeros([BLOCK], dtype=tl.float32)"),
                 body=("dot += x * t", "xx += x * x", "tt += t * t"),
                 post=(f"nx = tl.maximum(tl.sqrt(tl.sum(xx, axis=0)), {COSINE_EPS})",
                       f"nt = tl.maximum(tl.sqrt(tl.sum(tt, axis=0)), {COSINE_EPS})"))
        return RowSpec((p,), result="1.0 - tl.sum(dot, axis=0) / (nx * nt)", target="row",
                       comment="1 - cosine similarity, norms clamped at eps as torch does"), ()
    if op == "cross_entropy":
        passes = _lse_passes(rng.choice(LSE_VARIANTS))
        return RowSpec(passes, result="m + tl.log(s) - x_t", target="class",
                       comment="logsumexp(x) - x[target]", whole=(LSE_WHOLE,)), ()
    raise KeyError(op)


def _emit_loss(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    spec, helpers = loss_spec(call, prog)
    return emit_row_op(call, x, prog, [], spec, helpers)


LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "bce_with_logits", "kl_div", "cosine_loss",
          "cross_entropy")
EMITTERS = {op: _emit_loss for op in LOSSES}
