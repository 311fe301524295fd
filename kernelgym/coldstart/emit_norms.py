"""Norm layers and the channel softmax as Triton kernels.

Row norms (LayerNorm, RMSNorm over the last dim; InstanceNorm2d over one (n, c) plane; GroupNorm
over one (n, group) run of channels) are one program per row of a contiguous tensor: a mean pass,
a centred-variance pass (two passes rather than sum and sum of squares, so that inputs with a large
offset keep their precision), and a normalise pass that applies the affine parameters, the fused
epilogue and the store. Rows that fit one block are loaded once (`block` kernels); longer rows loop
in BLOCK chunks. BatchNorm (training mode: batch statistics, biased variance) reduces per channel
over (N, H, W); the channel softmax runs over dim 1 with an online max and sum.

Every size is read from the tensors at run time; statistics are fp32; stores cast to the output's dtype.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernelgym.coldstart.emit_pointwise import add_helpers, fill, pointwise_expr, ptr_params
from kernelgym.coldstart.program import OpCall, Program

RMS_EPS = 1.1920928955078125e-07  # nn.RMSNorm(eps=None): torch.finfo(torch.float32).eps for every dtype
# Largest blocks a launcher uses before it loops (module-level so that a test can shrink them and
# run the looping paths at the small CPU sizes).
ROW_CAPS = (1024, 2048, 4096, 4096, 8192)
BN_CAPS = (256, 512, 1024, 2048)
BN_ROW_CAPS = (16, 32, 64)  # rows per chunk of the column-tiled BatchNorm1d
SOFTMAX_C_CAPS = (32, 64, 128)


@dataclass
class Epilogue:
    """The fused pointwise ops of one kernel: statements on `v`, and the pointers they read."""

    lines: list[str] = field(default_factory=list)
    params: list[str] = field(default_factory=list)  # kernel pointer parameters
    tensors: list[str] = field(default_factory=list)  # their forward expressions, in the same order

    ops: list[str] = field(default_factory=list)

    @property
    def launcher_params(self) -> list[str]:
        return [f"a{i}" for i in range(len(self.params))]


def epilogue_code(prog: Program, kernel: str, calls: list[OpCall], index: dict[str, str],
                  offs: str = "offs", mask: str = "mask") -> Epilogue:
    """The statements that apply the pointwise run `calls` to `v` before a store at flat output
    index `offs`. `index` gives the kernel expressions of `col` (index along the output's last
    dim) and `chan` (index along dim 1 of a rank-4 output) in terms of `offs`."""
    if not calls:
        return Epilogue()
    exprs = [pointwise_expr(c) for c in calls]
    add_helpers(prog, exprs)
    ptrs = ptr_params(exprs)
    needs = sorted(frozenset().union(*(e.needs for e in exprs)))
    lines = [f"{name} = {index[name]}" for name in needs]
    if prog.style.helper_jit:
        helper = f"{kernel.removesuffix('_kernel')}_epilogue"
        args = ["v", offs, mask, *(p for p, _ in ptrs), *needs]
        params = ["v", "offs", "mask", *(p for p, _ in ptrs), *needs]
        body = [line for e in exprs for line in fill(e, "offs", "mask")]
        helper = prog.add_kernel(helper, "\n".join([
            "@triton.jit", f"def {helper}({', '.join(params)}):",
            *(f"    {line}" for line in body), "    return v"]))
        lines.append(f"v = {helper}({', '.join(args)})")
    else:
        lines += [line for e in exprs for line in fill(e, offs, mask)]
    return Epilogue(lines, [p for p, _ in ptrs], [t for _, t in ptrs], [c.op for c in calls])


def indent(lines: list[str], depth: int = 1) -> list[str]:
    return [("    " * depth + line) if line else line for line in lines]


def jit(prog: Program, name: str, params: list[str], body: list[str], comment: str = "",
        deco: list[str] | None = None) -> str:
    head = [*(deco or []), "@triton.jit", f"def {name}({', '.join(params)}):"]
    if comment and prog.style.comments:
        head.append(f"    # {comment}")
    return prog.add_kernel(name, "\n".join([*head, *indent(body)]))


def warps_expr(prog: Program, block: str) -> str:
    """num_warps for a launch: a fixed style draw, or derived from the block size at run time."""
    if prog.style.rng.random() < 0.5:
        return f"{prog.style.warps} if {block} <= 1024 else 8"
    return f"4 if {block} <= 2048 else 8"


# ----------------------------------------------------------------------------- row norms

@dataclass(frozen=True)
class RowNorm:
    """How one row-norm op maps onto rows: the launcher lines that set L (row length) and ROWS,
    the kernel's size parameters, and the weight index of element `j` of row `row`."""

    op: str
    sizes: tuple[str, ...]  # kernel size parameters besides L
    setup: tuple[str, ...]  # launcher lines defining L, ROWS and the sizes
    widx: str  # weight/bias index of element j of `row` ("" = per row: `wrow`)
    wrow: str = ""  # per-row weight index (instance norm)
    rms: bool = False
    bias: bool = True


def _row_norm(call: OpCall) -> RowNorm:
    if call.op in ("layer_norm", "rms_norm"):
        setup = ("L = x.shape[-1]", "ROWS = x.numel() // L")
        rank4 = ()
        return RowNorm(call.op, rank4, setup, "j", rms=call.op == "rms_norm", bias=call.op == "layer_norm")
    setup4 = ("N, C, H, W = x.shape", "HW = H * W")
    if call.op == "instance_norm":
        return RowNorm(call.op, ("C", "HW", "W"), (*setup4, "L = HW", "ROWS = N * C"), "", wrow="row % C")
    groups = int(call.args["groups"])
    return RowNorm(call.op, ("C", "HW", "W", "CPG"),
                   (*setup4, f"G = {groups}", "CPG = C // G", "L = CPG * HW", "ROWS = N * G"),
                   f"(row % {groups}) * CPG + j // HW")


def _row_index(norm: RowNorm) -> dict[str, str]:
    if norm.op in ("layer_norm", "rms_norm"):
        return {"col": "j", "chan": "j"}  # rank 2/3: add_bias reads the last dim
    return {"col": "offs % W", "chan": "(offs // HW) % C"}


def _affine_lines(norm: RowNorm, fold: bool) -> tuple[list[str], list[str]]:
    """(lines before the normalise loop, lines inside it) turning x into v."""
    if norm.rms:
        return [], ["w = tl.load(w_ptr + j, mask=mask, other=0.0).to(tl.float32)", "v = x * rstd * w"]
    if norm.wrow:
        pre = [f"wi = {norm.wrow}", "w = tl.load(w_ptr + wi).to(tl.float32)", "b = tl.load(b_ptr + wi).to(tl.float32)"]
        if fold:
            # one multiply-add per element: v = x * scale + shift
            return [*pre, "scale = rstd * w", "shift = b - mean * scale"], ["v = x * scale + shift"]
        return pre, ["v = (x - mean) * rstd * w + b"]
    return [], [f"w = tl.load(w_ptr + {norm.widx}, mask=mask, other=0.0).to(tl.float32)",
                f"b = tl.load(b_ptr + {norm.widx}, mask=mask, other=0.0).to(tl.float32)",
                "v = (x - mean) * rstd * w + b"]


def _row_stats_loop(norm: RowNorm) -> list[str]:
    if norm.rms:
        return ["acc = tl.zeros([BLOCK], dtype=tl.float32)",
                "for start in range(0, L, BLOCK):",
                "    j = start + cols",
                "    x = tl.load(x_row + j, mask=j < L, other=0.0).to(tl.float32)",
                "    acc += x * x",
                "rstd = tl.rsqrt(tl.sum(acc, axis=0) / L + eps)"]
    return ["acc = tl.zeros([BLOCK], dtype=tl.float32)",
            "for start in range(0, L, BLOCK):",
            "    j = start + cols",
            "    acc += tl.load(x_row + j, mask=j < L, other=0.0).to(tl.float32)",
            "mean = tl.sum(acc, axis=0) / L",
            "acc2 = tl.zeros([BLOCK], dtype=tl.float32)",
            "for start in range(0, L, BLOCK):",
            "    j = start + cols",
            "    mask = j < L",
            "    x = tl.load(x_row + j, mask=mask, other=0.0).to(tl.float32)",
            "    xc = tl.where(mask, x - mean, 0.0)",
            "    acc2 += xc * xc",
            "rstd = tl.rsqrt(tl.sum(acc2, axis=0) / L + eps)"]


def _row_stats_block(norm: RowNorm) -> list[str]:
    if norm.rms:
        return ["rstd = tl.rsqrt(tl.sum(x * x, axis=0) / L + eps)"]
    return ["mean = tl.sum(x, axis=0) / L",
            "xc = tl.where(mask, x - mean, 0.0)",
            "rstd = tl.rsqrt(tl.sum(xc * xc, axis=0) / L + eps)"]


def emit_row_norm(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    style = prog.style
    norm = _row_norm(call)
    base = f"{call.op}{''.join('_' + c.op for c in epilogue)}"[:48]
    fold = style.rng.random() < 0.5
    pre, inner = _affine_lines(norm, fold)
    ptrs = ["x_ptr", "w_ptr", *([] if not norm.bias else ["b_ptr"]), "out_ptr"]
    index = _row_index(norm)

    def kernel(mode: str) -> tuple[str, Epilogue]:
        name = f"{base}_{mode}_kernel"
        epi = epilogue_code(prog, name, epilogue, index, "offs", "mask")
        params = [*ptrs, *epi.params, "L", *norm.sizes, "eps", "BLOCK: tl.constexpr"]
        head = ["row = tl.program_id(0).to(tl.int64)", "x_row = x_ptr + row * L", "cols = tl.arange(0, BLOCK)"]
        store = [*epi.lines, "tl.store(out_ptr + offs, v, mask=mask)"]
        if mode == "loop":
            body = [*head, *_row_stats_loop(norm), *pre,
                    "for start in range(0, L, BLOCK):",
                    *indent(["j = start + cols", "mask = j < L", "offs = row * L + j",
                             "x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)", *inner, *store])]
            comment = f"{call.op}: one program per row, looping over the row in BLOCK chunks (fp32 statistics)"
        else:
            body = [*head, "j = cols", "mask = j < L", "offs = row * L + j",
                    "x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
                    *_row_stats_block(norm), *pre, *inner, *store]
            comment = f"{call.op}: one program per row, the whole row in one block (fp32 statistics)"
        return jit(prog, name, params, body, comment), epi

    cap = style.pick(ROW_CAPS)
    dispatch = style.rng.random() < 0.5
    loop, epi = kernel("loop")
    weights = ["w", *(["b"] if norm.bias else [])]
    fn_params = ["x", *weights, "eps", *epi.launcher_params]

    def launch(k: str, block: str) -> str:
        args = ["x", *weights, "out", *epi.launcher_params, "L", *norm.sizes, "eps"]
        return f"{k}[(ROWS,)]({', '.join(args)}, BLOCK={block}, num_warps={warps_expr(prog, block)})"

    lines = [f"def run_{base}({', '.join(fn_params)}):", "    x = x.contiguous()", "    out = torch.empty_like(x)",
             *indent(list(norm.setup))]
    if dispatch:
        block_kernel, _ = kernel("block")
        lines += [f"    if L <= {cap}:",
                  "        BLOCK = triton.next_power_of_2(L)",
                  f"        {launch(block_kernel, 'BLOCK')}",
                  "    else:",
                  f"        {launch(loop, str(cap))}"]
    else:
        lines += [f"    BLOCK = min(triton.next_power_of_2(L), {cap})", f"    {launch(loop, 'BLOCK')}"]
    lines.append("    return out")
    fn = prog.add_function(f"run_{base}", "\n".join(lines))
    eps = str(RMS_EPS) if norm.rms else f"{call.module}.eps"
    wargs = [f"{call.module}.weight", *([f"{call.module}.bias"] if norm.bias else [])]
    return prog.call(fn, [x, *wargs, eps, *epi.tensors])


# ----------------------------------------------------------------------------- batch norm

def emit_batch_norm(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    """Training-mode BatchNorm: per-channel mean and biased variance over (N, H, W)."""
    style = prog.style
    rank4 = call.op == "batch_norm2d"
    base = f"{call.op}{''.join('_' + c.op for c in epilogue)}"[:48]
    index = {"col": "offs % W", "chan": "(offs // HW) % C"} if rank4 else {"col": "offs % C", "chan": "offs % C"}
    sizes = ["C", "HW", *(["W"] if rank4 else [])]
    if not rank4 and style.rng.random() < 0.5:
        return _batch_norm1d_tiled(call, x, prog, epilogue, base)
    split = style.rng.random() < 0.5
    cap = style.pick(BN_CAPS)
    stats = [
        "c = tl.program_id(0).to(tl.int64)",
        "idx = tl.arange(0, BLOCK)",
        "acc = tl.zeros([BLOCK], dtype=tl.float32)",
        "for start in range(0, M, BLOCK):",
        "    i = start + idx",
        "    offs = (i // HW).to(tl.int64) * C * HW + c * HW + i % HW",
        "    acc += tl.load(x_ptr + offs, mask=i < M, other=0.0).to(tl.float32)",
        "mean = tl.sum(acc, axis=0) / M",
        "acc2 = tl.zeros([BLOCK], dtype=tl.float32)",
        "for start in range(0, M, BLOCK):",
        "    i = start + idx",
        "    mask = i < M",
        "    offs = (i // HW).to(tl.int64) * C * HW + c * HW + i % HW",
        "    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
        "    xc = tl.where(mask, x - mean, 0.0)",
        "    acc2 += xc * xc",
        "rstd = tl.rsqrt(tl.sum(acc2, axis=0) / M + eps)"]
    setup = ["N, C, H, W = x.shape", "HW = H * W"] if rank4 else ["N, C = x.shape", "HW = 1"]
    setup.append("M = N * HW")
    if split:
        # kernel 1: statistics per channel into fp32 buffers; kernel 2: normalise every element
        stats_k = jit(prog, f"{call.op}_stats_kernel", ["x_ptr", "mean_ptr", "rstd_ptr", "M", "C", "HW", "eps",
                                                        "BLOCK: tl.constexpr"],
                      [*stats, "tl.store(mean_ptr + c, mean)", "tl.store(rstd_ptr + c, rstd)"],
                      "one program per channel: batch mean and biased variance over (N, H, W)")
        name = f"{base}_apply_kernel"
        epi = epilogue_code(prog, name, epilogue, index)
        body = ["offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
                "mask = offs < n_elements",
                "ch = (offs // HW) % C",
                "x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
                "mean = tl.load(mean_ptr + ch, mask=mask, other=0.0)",
                "rstd = tl.load(rstd_ptr + ch, mask=mask, other=1.0)",
                "w = tl.load(w_ptr + ch, mask=mask, other=0.0).to(tl.float32)",
                "b = tl.load(b_ptr + ch, mask=mask, other=0.0).to(tl.float32)",
                "v = (x - mean) * rstd * w + b",
                *epi.lines,
                "tl.store(out_ptr + offs, v, mask=mask)"]
        params = ["x_ptr", "mean_ptr", "rstd_ptr", "w_ptr", "b_ptr", "out_ptr", *epi.params, "n_elements", *sizes,
                  "BLOCK: tl.constexpr"]
        if style.autotune:
            deco = ["@triton.autotune(", "    configs=[" + ", ".join(
                f"triton.Config({{'BLOCK': {b}}}, num_warps={w})" for b, w in ((256, 2), (1024, 4), (2048, 8)))
                + "],", "    key=['n_elements'],", ")"]
            grid, meta = "lambda meta: (triton.cdiv(n, meta['BLOCK']),)", ""
        else:
            deco, grid, meta = [], f"(triton.cdiv(n, {style.block}),)", f", BLOCK={style.block}, num_warps={style.warps}"
        apply_k = jit(prog, name, params, body, "normalise with the per-channel statistics, one element per lane",
                      deco)
        lines = [f"def run_{base}({', '.join(['x', 'w', 'b', 'eps', *epi.launcher_params])}):",
                 "    x = x.contiguous()", "    out = torch.empty_like(x)", *indent(setup),
                 "    n = x.numel()",
                 "    mean = torch.empty((C,), device=x.device, dtype=torch.float32)",
                 "    rstd = torch.empty((C,), device=x.device, dtype=torch.float32)",
                 f"    BLOCK = min(triton.next_power_of_2(M), {cap})",
                 f"    {stats_k}[(C,)](x, mean, rstd, M, C, HW, eps, BLOCK=BLOCK, num_warps={warps_expr(prog, 'BLOCK')})",
                 f"    grid = {grid}",
                 f"    {apply_k}[grid]({', '.join(['x', 'mean', 'rstd', 'w', 'b', 'out', *epi.launcher_params, 'n', *sizes])}{meta})",
                 "    return out"]
    else:
        name = f"{base}_kernel"
        epi = epilogue_code(prog, name, epilogue, index)
        body = [*stats,
                "w = tl.load(w_ptr + c).to(tl.float32)",
                "b = tl.load(b_ptr + c).to(tl.float32)",
                "scale = rstd * w",
                "shift = b - mean * scale",
                "for start in range(0, M, BLOCK):",
                *indent(["i = start + idx",
                         "mask = i < M",
                         "offs = (i // HW).to(tl.int64) * C * HW + c * HW + i % HW",
                         "x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
                         "v = x * scale + shift",
                         *epi.lines,
                         "tl.store(out_ptr + offs, v, mask=mask)"])]
        params = ["x_ptr", "w_ptr", "b_ptr", "out_ptr", *epi.params, "M", *sizes, "eps", "BLOCK: tl.constexpr"]
        k = jit(prog, name, params, body,
                "one program per channel: batch statistics over (N, H, W), then normalise that channel")
        lines = [f"def run_{base}({', '.join(['x', 'w', 'b', 'eps', *epi.launcher_params])}):",
                 "    x = x.contiguous()", "    out = torch.empty_like(x)", *indent(setup),
                 f"    BLOCK = min(triton.next_power_of_2(M), {cap})",
                 f"    {k}[(C,)]({', '.join(['x', 'w', 'b', 'out', *epi.launcher_params, 'M', *sizes, 'eps'])}, "
                 f"BLOCK=BLOCK, num_warps={warps_expr(prog, 'BLOCK')})",
                 "    return out"]
    fn = prog.add_function(f"run_{base}", "\n".join(lines))
    return prog.call(fn, [x, f"{call.module}.weight", f"{call.module}.bias", f"{call.module}.eps", *epi.tensors])


def _batch_norm1d_tiled(call: OpCall, x: str, prog: Program, epilogue: list[OpCall], base: str) -> str:
    """BatchNorm1d on (N, C) with coalesced loads: a program owns BLOCK_C features and walks the batch."""
    style = prog.style
    name = f"{base}_cols_kernel"
    epi = epilogue_code(prog, name, epilogue, {"col": "offs % C", "chan": "offs % C"})
    tile = ["r = (r0 + rs).to(tl.int64)", "mask = (r < N)[:, None] & cmask[None, :]",
            "offs = r[:, None] * C + cols[None, :]",
            "x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)"]
    body = ["cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)", "cmask = cols < C",
            "rs = tl.arange(0, BLOCK_R)",
            "acc = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)",
            "for r0 in range(0, N, BLOCK_R):", *indent([*tile, "acc += x"]),
            "mean = tl.sum(acc, axis=0) / N",
            "acc2 = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)",
            "for r0 in range(0, N, BLOCK_R):",
            *indent([*tile, "xc = tl.where(mask, x - mean[None, :], 0.0)", "acc2 += xc * xc"]),
            "rstd = tl.rsqrt(tl.sum(acc2, axis=0) / N + eps)",
            "w = tl.load(w_ptr + cols, mask=cmask, other=0.0).to(tl.float32)",
            "b = tl.load(b_ptr + cols, mask=cmask, other=0.0).to(tl.float32)",
            "scale = rstd * w",
            "shift = b - mean * scale",
            "for r0 in range(0, N, BLOCK_R):",
            *indent([*tile, "v = x * scale[None, :] + shift[None, :]", *epi.lines,
                     "tl.store(out_ptr + offs, v, mask=mask)"])]
    k = jit(prog, name, ["x_ptr", "w_ptr", "b_ptr", "out_ptr", *epi.params, "N", "C", "eps",
                         "BLOCK_R: tl.constexpr", "BLOCK_C: tl.constexpr"], body,
            "BLOCK_C features per program: batch mean and biased variance down the rows, then normalise")
    block_c = style.pick((16, 32, 64))
    fn = prog.add_function(f"run_{base}", "\n".join([
        f"def run_{base}({', '.join(['x', 'w', 'b', 'eps', *epi.launcher_params])}):",
        "    x = x.contiguous()", "    out = torch.empty_like(x)", "    N, C = x.shape",
        f"    BLOCK_R = min(triton.next_power_of_2(N), {style.pick(BN_ROW_CAPS)})",
        f"    {k}[(triton.cdiv(C, {block_c}),)]({', '.join(['x', 'w', 'b', 'out', *epi.launcher_params, 'N', 'C', 'eps'])}, "
        f"BLOCK_R=BLOCK_R, BLOCK_C={block_c}, num_warps={style.pick((2, 4, 8))})",
        "    return out"]))
    return prog.call(fn, [x, f"{call.module}.weight", f"{call.module}.bias", f"{call.module}.eps", *epi.tensors])


# ----------------------------------------------------------------------------- softmax over channels

def emit_softmax_channels(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    """softmax over dim 1 of (N, C, H, W): a [BLOCK_C, BLOCK_HW] tile per program, channels strided by HW."""
    style = prog.style
    base = f"softmax_channels{''.join('_' + c.op for c in epilogue)}"[:48]
    index = {"col": "offs % W", "chan": "(offs // HW) % C"}
    block_hw = style.pick((16, 32, 64))
    cap_c = style.pick(SOFTMAX_C_CAPS)
    head = ["pid_hw = tl.program_id(0)", "n = tl.program_id(1).to(tl.int64)",
            "hw = pid_hw * BLOCK_HW + tl.arange(0, BLOCK_HW)", "hw_mask = hw < HW",
            "cs = tl.arange(0, BLOCK_C)", "base = n * C * HW"]

    def kernel(mode: str) -> tuple[str, Epilogue]:
        name = f"{base}_{mode}_kernel"
        epi = epilogue_code(prog, name, epilogue, index)
        store = [*epi.lines, "tl.store(out_ptr + offs, v, mask=mask)"]
        tile = ["mask = (c < C)[:, None] & hw_mask[None, :]", "offs = base + c[:, None] * HW + hw[None, :]"]
        if mode == "tile":
            body = [*head, "c = cs", *tile,
                    "x = tl.load(x_ptr + offs, mask=mask, other=float('-inf')).to(tl.float32)",
                    "m = tl.max(x, axis=0)",
                    "e = tl.exp(x - m[None, :])",
                    "e = tl.where(mask, e, 0.0)",
                    "s = tl.sum(e, axis=0)",
                    "v = e / s[None, :]", *store]
            comment = "softmax over channels: all C channels of BLOCK_HW pixels in one tile"
        else:
            body = [*head,
                    "m = tl.full([BLOCK_HW], -3.0e38, dtype=tl.float32)",
                    "s = tl.zeros([BLOCK_HW], dtype=tl.float32)",
                    "for c0 in range(0, C, BLOCK_C):",
                    *indent(["c = c0 + cs", *tile,
                             "x = tl.load(x_ptr + offs, mask=mask, other=float('-inf')).to(tl.float32)",
                             "m_new = tl.maximum(m, tl.max(x, axis=0))",
                             "s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new[None, :]), axis=0)",
                             "m = m_new"]),
                    "for c0 in range(0, C, BLOCK_C):",
                    *indent(["c = c0 + cs", *tile,
                             "x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)",
                             "v = tl.exp(x - m[None, :]) / s[None, :]", *store])]
            comment = "softmax over channels: online max and sum over channel chunks, then normalise"
        params = ["x_ptr", "out_ptr", *epi.params, "C", "HW", "W", "BLOCK_C: tl.constexpr", "BLOCK_HW: tl.constexpr"]
        return jit(prog, name, params, body, comment), epi

    loop, epi = kernel("loop")
    args = ", ".join(["x", "out", *epi.launcher_params, "C", "HW", "W"])
    warps = style.pick((1, 2, 4))
    lines = [f"def run_{base}({', '.join(['x', *epi.launcher_params])}):",
             "    x = x.contiguous()", "    out = torch.empty_like(x)",
             "    N, C, H, W = x.shape", "    HW = H * W",
             f"    grid = (triton.cdiv(HW, {block_hw}), N)"]
    if style.rng.random() < 0.5:
        tile, _ = kernel("tile")
        lines += [f"    if C <= {cap_c}:",
                  f"        {tile}[grid]({args}, BLOCK_C=triton.next_power_of_2(C), BLOCK_HW={block_hw}, "
                  f"num_warps={warps})",
                  "    else:",
                  f"        {loop}[grid]({args}, BLOCK_C={cap_c}, BLOCK_HW={block_hw}, num_warps={warps})"]
    else:
        lines += [f"    BLOCK_C = min(triton.next_power_of_2(C), {cap_c})",
                  f"    {loop}[grid]({args}, BLOCK_C=BLOCK_C, BLOCK_HW={block_hw}, num_warps={warps})"]
    lines.append("    return out")
    fn = prog.add_function(f"run_{base}", "\n".join(lines))
    return prog.call(fn, [x, *epi.tensors])


EMITTERS = {
    "layer_norm": emit_row_norm,
    "rms_norm": emit_row_norm,
    "instance_norm": emit_row_norm,
    "group_norm": emit_row_norm,
    "batch_norm1d": emit_batch_norm,
    "batch_norm2d": emit_batch_norm,
    "softmax_channels": emit_softmax_channels,
}
EPILOGUE_OPS = set(EMITTERS)
