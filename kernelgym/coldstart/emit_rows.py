"""Row ops over the last dim (center, cumsum, softmax, log_softmax, l2_normalize), last-dim
reductions (sum, mean, amax, logsumexp, vector_norm, var) and glu, written by construction.

A row op sees its input as (rows, N) with N the last dim, read from the tensor at run time. The
kernel runs one program per row and walks the row in BLOCK chunks (BLOCK = min(next_power_of_2(N),
cap), chosen by the launcher), so the same kernel serves a 17-wide row on the interpreter and a
16M-wide flattened row on the GPU. Each op is a `RowSpec`: reduction passes over the row (their
accumulators, loop body and what follows the loop) and then either a write pass that produces `v`
per element (same shape out; a pointwise epilogue is fused before the store) or a scalar per row.
Everything is computed in fp32; the store casts to the output's dtype.

`emit_losses.py` builds its per-sample losses from the same pieces.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelgym.coldstart.emit_pointwise import add_helpers, fill, pointwise_expr, ptr_params
from kernelgym.coldstart.program import OpCall, PointwiseExpr, Program

NEG_INF = '-float("inf")'
CAPS = (512, 1024, 1024, 2048, 4096)  # chunk width of the looping kernel
RESIDENT_CAPS = (1024, 2048, 4096)  # widest row the whole-row kernel takes (longer rows loop)
RESIDENT_SHARE = 0.4  # answers that add a whole-row kernel for rows up to its cap


@dataclass(frozen=True)
class Pass:
    """One walk over the row: `init` before the loop, `body` per chunk (with `x`, `mask`, `cols`
    and, for losses, `t` loaded), `post` after the loop. `other` fills x's masked lanes."""

    init: tuple[str, ...] = ()
    body: tuple[str, ...] = ()
    post: tuple[str, ...] = ()
    other: str = "0.0"


@dataclass(frozen=True)
class RowSpec:
    """An op over rows: reduction `passes`, then a `write` pass setting `v` (same shape out) or
    a per-row `result` expression (last dim reduced away). `target` is "" (no second input),
    "row" (a tensor of x's shape, loaded as `t`) or "class" (one int64 class index per row)."""

    passes: tuple[Pass, ...]
    write: Pass | None = None
    result: str = ""
    target: str = ""
    comment: str = ""
    whole: tuple[Pass, ...] | None = None  # the passes when the whole row sits in one block (default: `passes`)
    whole_write: Pass | None = None  # ... and the write pass then (default: `write`)


# --- the softmax statistics (max m and sum s of exp(x - m)), three ways --------------------------
def _lse_passes(variant: str) -> tuple[Pass, ...]:
    if variant == "online_vec":
        return (Pass(init=(f"m_vec = tl.full([BLOCK], {NEG_INF}, tl.float32)",
                           "s_vec = tl.zeros([BLOCK], dtype=tl.float32)"),
                     body=("m_new = tl.maximum(m_vec, x)",
                           f"m_safe = tl.where(m_new == {NEG_INF}, 0.0, m_new)",
                           "s_vec = s_vec * tl.exp(m_vec - m_safe) + tl.exp(x - m_safe)",
                           "m_vec = m_new"),
                     post=("m = tl.max(m_vec, axis=0)", "s = tl.sum(s_vec * tl.exp(m_vec - m), axis=0)"),
                     other=NEG_INF),)
    if variant == "online_scalar":
        return (Pass(init=(f"m = tl.full((), {NEG_INF}, tl.float32)", "s = tl.zeros((), dtype=tl.float32)"),
                     body=("m_new = tl.maximum(m, tl.max(x, axis=0))",
                           "s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)",
                           "m = m_new"),
                     other=NEG_INF),)
    return (Pass(init=(f"m_vec = tl.full([BLOCK], {NEG_INF}, tl.float32)",), body=("m_vec = tl.maximum(m_vec, x)",),
                 post=("m = tl.max(m_vec, axis=0)",), other=NEG_INF),
            Pass(init=("s_vec = tl.zeros([BLOCK], dtype=tl.float32)",), body=("s_vec += tl.exp(x - m)",),
                 post=("s = tl.sum(s_vec, axis=0)",), other=NEG_INF))


LSE_VARIANTS = ("online_vec", "online_scalar", "two_pass")
# the whole row in registers: max and sum directly (masked lanes are -inf, exp gives 0)
LSE_WHOLE = Pass(body=("m = tl.max(x, axis=0)", "s = tl.sum(tl.exp(x - m), axis=0)"), other=NEG_INF)


def _sum_pass(term: str, name: str = "acc", other: str = "0.0") -> Pass:
    return Pass(init=(f"{name} = tl.zeros([BLOCK], dtype=tl.float32)",), body=(f"{name} += {term}",), other=other)


def _mean_pass() -> Pass:
    return Pass(init=("acc = tl.zeros([BLOCK], dtype=tl.float32)",), body=("acc += x",),
                post=("mean = tl.sum(acc, axis=0) / N",))


def row_spec(op: str, style_rng_choice) -> RowSpec:
    """The spec of a row op or reduction; `style_rng_choice(tuple)` draws the variant."""
    if op == "center":
        return RowSpec((_mean_pass(),), write=Pass(body=("v = x - mean",)), comment="x - mean(x) over the row")
    if op == "cumsum":
        return RowSpec((), write=Pass(init=("carry = tl.zeros((), dtype=tl.float32)",),
                                      body=("v = tl.cumsum(x, axis=0) + carry", "carry += tl.sum(x, axis=0)")),
                       comment="inclusive scan in fp32 (chunks carry the running total)",
                       whole_write=Pass(body=("v = tl.cumsum(x, axis=0)",)))
    if op in ("softmax", "log_softmax", "logsumexp"):
        passes = _lse_passes(style_rng_choice(LSE_VARIANTS))
        if op == "softmax":
            inv = style_rng_choice((True, False))
            write = Pass(init=("inv_s = 1.0 / s",), body=("v = tl.exp(x - m) * inv_s",)) if inv else \
                Pass(body=("v = tl.exp(x - m) / s",))
            return RowSpec(passes, write=write, comment="max-subtracted softmax: row max m, sum s of exp(x - m)",
                           whole=(LSE_WHOLE,))
        if op == "log_softmax":
            return RowSpec(passes, write=Pass(init=("lse = m + tl.log(s)",), body=("v = x - lse",)),
                           comment="x - logsumexp(x), with the row max subtracted before exp", whole=(LSE_WHOLE,))
        return RowSpec(passes, result="m + tl.log(s)", comment="logsumexp with the row max subtracted before exp",
                       whole=(LSE_WHOLE,))
    if op == "l2_normalize":
        return RowSpec((Pass(init=("acc = tl.zeros([BLOCK], dtype=tl.float32)",), body=("acc += x * x",),
                             post=("inv_norm = 1.0 / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), 1e-12)",)),),
                       write=Pass(body=("v = x * inv_norm",)), comment="x / max(||x||_2, 1e-12) over the row")
    if op == "sum":
        return RowSpec((_sum_pass("x"),), result="tl.sum(acc, axis=0)", comment="sum over the row")
    if op == "mean":
        return RowSpec((_sum_pass("x"),), result="tl.sum(acc, axis=0) / N", comment="mean over the row")
    if op == "amax":
        return RowSpec((Pass(init=(f"acc = tl.full([BLOCK], {NEG_INF}, tl.float32)",),
                             body=("acc = tl.maximum(acc, x)",), other=NEG_INF),),
                       result="tl.max(acc, axis=0)", comment="max over the row (masked lanes are -inf)")
    if op == "vector_norm":
        return RowSpec((_sum_pass("x * x"),), result="tl.sqrt(tl.sum(acc, axis=0))", comment="sqrt(sum x^2) over the row")
    if op == "var":
        return RowSpec((_mean_pass(), Pass(init=("acc2 = tl.zeros([BLOCK], dtype=tl.float32)",),
                                           body=("d = tl.where(mask, x - mean, 0.0)", "acc2 += d * d"))),
                       result="tl.sum(acc2, axis=0) / (N - 1)",
                       comment="unbiased variance: mean pass, then the centred sum of squares / (N - 1)")
    raise KeyError(op)


# --- kernel and launcher --------------------------------------------------------------------------
def _loop(p: Pass, spec: RowSpec, tail: list[str]) -> list[str]:
    lines = list(p.init)
    lines.append("for start in range(0, N, BLOCK):")
    inner = ["cols = start + tl.arange(0, BLOCK)", "mask = cols < N",
             f"x = tl.load(x_row + cols, mask=mask, other={p.other}).to(tl.float32)"]
    if spec.target == "row":
        inner.append("t = tl.load(t_row + cols, mask=mask, other=0.0).to(tl.float32)")
    inner += [*p.body, *tail]
    lines += [f"    {line}" for line in inner]
    lines += list(p.post)
    return lines


def _head(spec: RowSpec) -> list[str]:
    lines = ["row = tl.program_id(0).to(tl.int64)", "x_row = x_ptr + row * N"]
    if spec.target == "row":
        lines.append("t_row = t_ptr + row * N")
    if spec.write is not None:
        lines.append("out_row = out_ptr + row * N")
    return lines


def _finish(spec: RowSpec) -> list[str]:
    return [] if spec.write is not None else [f"tl.store(out_ptr + row, {spec.result})"]


def _class_target(spec: RowSpec) -> list[str]:
    return ["tgt = tl.load(t_ptr + row)", "x_t = tl.load(x_row + tgt).to(tl.float32)"] if spec.target == "class" else []


def _looped_body(spec: RowSpec, tail: list[str]) -> list[str]:
    """Every pass walks the row in BLOCK chunks: any N."""
    body = _head(spec)
    for p in spec.passes:
        body += _loop(p, spec, [])
    body += _class_target(spec)
    if spec.write is not None:
        body += _loop(spec.write, spec, tail)
    return body + _finish(spec)


def _resident_body(spec: RowSpec, tail: list[str]) -> list[str]:
    """The row is loaded once (BLOCK >= N) and every pass works on the registers."""
    body = _head(spec) + ["cols = tl.arange(0, BLOCK)", "mask = cols < N",
                          "x_in = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)"]
    if spec.target == "row":
        body.append("t = tl.load(t_row + cols, mask=mask, other=0.0).to(tl.float32)")
    for p in spec.whole or spec.passes:
        body.append("x = x_in" if p.other == "0.0" else f"x = tl.where(mask, x_in, {p.other})")
        body += [*p.init, *p.body, *p.post]
    body += _class_target(spec)
    if spec.write is not None:
        body.append("x = x_in")
        write = spec.whole_write or spec.write
        body += [*write.init, *write.body, *tail]
    return body + _finish(spec)


def emit_row_op(call: OpCall, x: str, prog: Program, epilogue: list[OpCall], spec: RowSpec,
                helpers: tuple[tuple[str, str], ...] = ()) -> str:
    """Kernel + launcher for `spec` applied to `x` (and `call.inputs[0]` as target); returns the output variable."""
    style = prog.style
    rng = style.rng
    same_shape = spec.write is not None
    exprs: list[PointwiseExpr] = [pointwise_expr(c) for c in epilogue] if same_shape else []
    add_helpers(prog, exprs)
    for name, source in helpers:
        prog.add_kernel(name, source)
    ptrs = ptr_params(exprs)
    needs = frozenset().union(*(e.needs for e in exprs)) if exprs else frozenset()
    base = "_".join([call.op, *(c.op for c in epilogue)])[:48]
    name = f"{base}_rows_kernel"

    tail = []
    if exprs:
        tail.append("offs = row * N + cols")
        if "chan" in needs:
            tail.append("chan = (offs // HW) % C")
        tail += [line for e in exprs for line in fill(e, "offs", "mask", col="cols")]
    tail.append("tl.store(out_row + cols, v, mask=mask)")

    params = ["x_ptr", *(["t_ptr"] if spec.target else []), "out_ptr", *(p for p, _ in ptrs), "N",
              *(["C", "HW"] if "chan" in needs else []), "BLOCK: tl.constexpr"]
    autotune = style.autotune
    if autotune:
        deco = ["@triton.autotune(", "    configs=[" + ", ".join(
            f"triton.Config({{}}, num_warps={w})" for w in (2, 4, 8)) + "],", "    key=['N'],", ")", "@triton.jit"]
    else:
        deco = ["@triton.jit"]
    resident = rng.random() < RESIDENT_SHARE

    def kernel_source(kname: str, whole_row: bool) -> str:
        comment = []
        if style.comments:
            what = spec.comment or call.op
            how = "the whole row in one block" if whole_row else "the row in BLOCK chunks"
            comment = [f"    # one program per row, {how}: {what}"
                       + (f"; then {', '.join(c.op for c in epilogue)}" if epilogue else "")]
        body = _resident_body(spec, tail) if whole_row else _looped_body(spec, tail)
        return "\n".join([*deco, f"def {kname}({', '.join(params)}):", *comment, *(f"    {line}" for line in body)])

    kernel = prog.add_kernel(name, kernel_source(name, False))
    if resident:
        one = f"{base}_row_block_kernel"
        one = prog.add_kernel(one, kernel_source(one, True))

    cap = rng.choice(CAPS)
    fn_params = ["x", *(["t"] if spec.target else []), *(f"a{i}" for i in range(len(ptrs)))]
    lines = [f"def run_{base}({', '.join(fn_params)}):", "    x = x.contiguous()"]
    if spec.target:
        lines.append("    t = t.contiguous()")
    lines += ["    N = x.shape[-1]", "    rows = x.numel() // N"]
    lines.append("    out = torch.empty_like(x)" if same_shape else
                 "    out = torch.empty(x.shape[:-1], dtype=x.dtype, device=x.device)")
    if "chan" in needs:
        lines += ["    C = x.shape[1] if x.dim() > 1 else 1", "    HW = x.shape[2] * x.shape[3] if x.dim() == 4 else 1"]
    args = ["x", *(["t"] if spec.target else []), "out", *(f"a{i}" for i in range(len(ptrs))), "N",
            *(["C", "HW"] if "chan" in needs else [])]
    warps_rule = not autotune and rng.random() < 0.5

    def launch(k: str, indent: str) -> list[str]:
        out, meta = [], "BLOCK=BLOCK"
        if warps_rule:
            out.append(f"{indent}num_warps = 4 if BLOCK <= 1024 else 8")
            meta += ", num_warps=num_warps"
        elif not autotune:
            meta += f", num_warps={style.warps}"
        return out + [f"{indent}{k}[(rows,)]({', '.join(args)}, {meta})"]

    if resident:
        whole = rng.choice(RESIDENT_CAPS)
        lines += [f"    if N <= {whole}:", "        # the whole row fits one block: read it once",
                  "        BLOCK = triton.next_power_of_2(N)", *launch(one, "        "), "    else:",
                  f"        BLOCK = {cap}", *launch(kernel, "        ")]
    else:
        lines.append(f"    BLOCK = min(triton.next_power_of_2(N), {cap})")
        lines += launch(kernel, "    ")
    lines.append("    return out")
    fn = prog.add_function(f"run_{base}", "\n".join(lines))
    forward_args = [x, *(call.inputs[:1] if spec.target else ()), *(t for _, t in ptrs)]
    return prog.call(fn, forward_args)


def _emit_row(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    return emit_row_op(call, x, prog, epilogue, row_spec(call.op, prog.style.rng.choice))


# --- glu: out = a * sigmoid(b), a and b the halves of the last dim ----------------------------------
def emit_glu(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    style = prog.style
    exprs = [pointwise_expr(c) for c in epilogue]
    add_helpers(prog, exprs)
    ptrs = ptr_params(exprs)
    needs = frozenset().union(*(e.needs for e in exprs)) if exprs else frozenset()
    base = "_".join([call.op, *(c.op for c in epilogue)])[:48]
    name = f"{base}_kernel"
    body = ["pid = tl.program_id(0)", "offs = pid * BLOCK + tl.arange(0, BLOCK)", "mask = offs < n_out",
            "r = offs // H", "col = offs % H", "a_offs = r * (2 * H) + col",
            "a = tl.load(x_ptr + a_offs, mask=mask, other=0.0).to(tl.float32)",
            "b = tl.load(x_ptr + a_offs + H, mask=mask, other=0.0).to(tl.float32)",
            "v = a * tl.sigmoid(b)"]
    if "chan" in needs:
        body.append("chan = (offs // HW) % C")
    body += [line for e in exprs for line in fill(e, "offs", "mask", col="col")]
    body.append("tl.store(out_ptr + offs, v, mask=mask)")
    params = ["x_ptr", "out_ptr", *(p for p, _ in ptrs), "n_out", "H", *(["C", "HW"] if "chan" in needs else []),
              "BLOCK: tl.constexpr"]
    comment = ["    # glu over the last dim: out[r, c] = x[r, c] * sigmoid(x[r, H + c]), H = half the row"] \
        if style.comments else []
    kernel = prog.add_kernel(name, "\n".join(["@triton.jit", f"def {name}({', '.join(params)}):", *comment,
                                              *(f"    {line}" for line in body)]))
    fn_params = ["x", *(f"a{i}" for i in range(len(ptrs)))]
    lines = [f"def run_{base}({', '.join(fn_params)}):", "    x = x.contiguous()", "    H = x.shape[-1] // 2",
             "    out = torch.empty((*x.shape[:-1], H), dtype=x.dtype, device=x.device)", "    n_out = out.numel()"]
    if "chan" in needs:
        lines += ["    C = out.shape[1] if out.dim() > 1 else 1",
                  "    HW = out.shape[2] * out.shape[3] if out.dim() == 4 else 1"]
    args = ["x", "out", *(f"a{i}" for i in range(len(ptrs))), "n_out", "H", *(["C", "HW"] if "chan" in needs else [])]
    lines += [f"    {kernel}[(triton.cdiv(n_out, {style.block}),)]({', '.join(args)}, BLOCK={style.block}, "
              f"num_warps={style.warps})", "    return out"]
    fn = prog.add_function(f"run_{base}", "\n".join(lines))
    return prog.call(fn, [x, *(t for _, t in ptrs)])


ROW_OPS = ("center", "cumsum", "softmax", "log_softmax", "l2_normalize")
REDUCTIONS = ("sum", "mean", "amax", "logsumexp", "vector_norm", "var")

EMITTERS = {op: _emit_row for op in ROW_OPS + REDUCTIONS}
EMITTERS["glu"] = emit_glu
EPILOGUE_OPS = {*ROW_OPS, "glu"}
