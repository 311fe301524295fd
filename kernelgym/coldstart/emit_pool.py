"""Pooling ops as Triton kernels: 2x2 / 2 max and average pooling (floor: an odd last row or column
is dropped, so every window read is in bounds), their 1D versions over the last dim of (B, C, L),
and the global average pool (N, C, H, W) -> (N, C).

Windowed pools run either one output element per lane over the flat output, or a 2D tile of
outputs (rows x BLOCK_W) per program. Values are compared and summed in fp32; the store casts to
the output's dtype. A fused pointwise epilogue sees the flat output index `offs`.
"""

from __future__ import annotations

from kernelgym.coldstart.emit_norms import Epilogue, epilogue_code, indent, jit, warps_expr
from kernelgym.coldstart.program import OpCall, Program

GAP_CAPS = (128, 256, 512, 1024)  # largest H * W chunk of the global average pool


def _window(op: str, loads: list[str]) -> list[str]:
    """v from the window's loaded values x0.. (fp32)."""
    names = [f"x{i}" for i in range(len(loads))]
    lines = [f"{n} = {ld}" for n, ld in zip(names, loads)]
    if op.startswith("max"):
        acc = names[0]
        for n in names[1:]:
            acc = f"tl.maximum({acc}, {n})"
        return [*lines, f"v = {acc}"]
    return [*lines, f"v = ({' + '.join(names)}) * {1.0 / len(names)!r}"]


def _load(src: str, mask: str) -> str:
    return f"tl.load(x_ptr + {src}, mask={mask}, other=0.0).to(tl.float32)"


def emit_pool(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    style = prog.style
    two_d = call.op.endswith("2d")
    base = f"{call.op}{''.join('_' + c.op for c in epilogue)}"[:48]
    flat = style.rng.random() < 0.5
    if two_d:
        index = {"col": "offs % OW", "chan": "(offs // (OH * OW)) % C"}
        sizes = ["C", "H", "W", "OH", "OW"]
        setup = ["N, C, H, W = x.shape", "OH = H // 2", "OW = W // 2",
                 "out = torch.empty((N, C, OH, OW), device=x.device, dtype=x.dtype)"]
        taps = ["src", "src + 1", "src + W", "src + W + 1"]
    else:
        index = {"col": "offs % OL", "chan": "(offs // OL) % C"}
        sizes = ["L", "OL"]
        setup = ["B, C, L = x.shape", "OL = L // 2",
                 "out = torch.empty((B, C, OL), device=x.device, dtype=x.dtype)"]
        taps = ["src", "src + 1"]
    kind = "max" if call.op.startswith("max") else "mean"
    if flat:
        name = f"{base}_kernel"
        epi = epilogue_code(prog, name, epilogue, index)
        if two_d:
            where = ["ow = offs % OW", "t = offs // OW", "oh = t % OH", "plane = t // OH",
                     "src = plane * H * W + (2 * oh) * W + 2 * ow"]
        else:
            where = ["ol = offs % OL", "src = (offs // OL) * L + 2 * ol"]
        body = ["offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
                "mask = offs < n_out", *where, *_window(call.op, [_load(t, "mask") for t in taps]),
                *epi.lines, "tl.store(out_ptr + offs, v, mask=mask)"]
        params = ["x_ptr", "out_ptr", *epi.params, "n_out", *sizes, "BLOCK: tl.constexpr"]
        if style.autotune:
            deco = ["@triton.autotune(", "    configs=[" + ", ".join(
                f"triton.Config({{'BLOCK': {b}}}, num_warps={w})" for b, w in ((256, 2), (512, 4), (1024, 4)))
                + "],", "    key=['n_out'],", ")"]
            grid, meta = "lambda meta: (triton.cdiv(n_out, meta['BLOCK']),)", ""
        else:
            deco, grid, meta = [], f"(triton.cdiv(n_out, {style.block}),)", \
                f", BLOCK={style.block}, num_warps={style.warps}"
        k = jit(prog, name, params, body, f"{kind} over each 2-wide window, one output element per lane", deco)
        launch = ["n_out = out.numel()", f"grid = {grid}",
                  f"{k}[grid]({', '.join(['x', 'out', *epi.launcher_params, 'n_out', *sizes])}{meta})"]
    else:
        name = f"{base}_tile_kernel"
        epi = epilogue_code(prog, name, epilogue, index)
        bw = style.pick((16, 32, 64))
        br = style.pick((4, 8, 16))
        if two_d:
            # program = BLOCK_R output rows x BLOCK_W output columns of one (n, c) plane
            body = ["plane = tl.program_id(0).to(tl.int64)", "pid_h = tl.program_id(1)", "pid_w = tl.program_id(2)",
                    "oh = pid_h * BLOCK_R + tl.arange(0, BLOCK_R)", "ow = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)",
                    "mask = (oh < OH)[:, None] & (ow < OW)[None, :]",
                    "src = plane * H * W + (2 * oh)[:, None] * W + (2 * ow)[None, :]",
                    "offs = plane * OH * OW + oh[:, None] * OW + ow[None, :]"]
            grid = f"(N * C, triton.cdiv(OH, {br}), triton.cdiv(OW, {bw}))"  # planes on axis 0: no 65535 limit
            comment = f"{kind} pool 2x2 / 2 over a BLOCK_R x BLOCK_W tile of one plane's outputs"
        else:
            # program = BLOCK_R rows of (B * C) x BLOCK_W outputs along the length
            body = ["pid_r = tl.program_id(0)", "pid_w = tl.program_id(1)",
                    "r = (pid_r * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)",
                    "ol = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)",
                    "mask = (r < ROWS)[:, None] & (ol < OL)[None, :]",
                    "src = r[:, None] * L + (2 * ol)[None, :]",
                    "offs = r[:, None] * OL + ol[None, :]"]
            grid = f"(triton.cdiv(ROWS, {br}), triton.cdiv(OL, {bw}))"
            comment = f"{kind} pool 2 / 2 over a BLOCK_R x BLOCK_W tile of (row, output position)"
            sizes = ["ROWS", *sizes]
        body += [*_window(call.op, [_load(t, "mask") for t in taps]), *epi.lines,
                 "tl.store(out_ptr + offs, v, mask=mask)"]
        params = ["x_ptr", "out_ptr", *epi.params, *sizes, "BLOCK_R: tl.constexpr", "BLOCK_W: tl.constexpr"]
        k = jit(prog, name, params, body, comment)
        launch = ([] if two_d else ["ROWS = B * C"]) + [
            f"grid = {grid}",
            f"{k}[grid]({', '.join(['x', 'out', *epi.launcher_params, *sizes])}, BLOCK_R={br}, BLOCK_W={bw}, "
            f"num_warps={style.pick((1, 2, 4))})"]
    fn = prog.add_function(f"run_{base}", "\n".join([
        f"def run_{base}({', '.join(['x', *epi.launcher_params])}):", "    x = x.contiguous()",
        *indent(setup), *indent(launch), "    return out"]))
    return prog.call(fn, [x, *epi.tensors])


def emit_global_avg_pool(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    """(N, C, H, W) -> (N, C): BLOCK_R planes per program, each summed over H * W in BLOCK_HW chunks."""
    style = prog.style
    base = f"global_avg_pool{''.join('_' + c.op for c in epilogue)}"[:48]
    name = f"{base}_kernel"
    epi: Epilogue = epilogue_code(prog, name, epilogue, {"col": "offs % C", "chan": "offs % C"})
    br = style.pick((1, 2, 4, 8))
    cap = style.pick(GAP_CAPS)
    body = ["offs = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)",
            "mask = offs < ROWS",
            "cols = tl.arange(0, BLOCK_HW)",
            "acc = tl.zeros([BLOCK_R, BLOCK_HW], dtype=tl.float32)",
            "for start in range(0, HW, BLOCK_HW):",
            *indent(["j = start + cols",
                     "m = mask[:, None] & (j < HW)[None, :]",
                     "acc += tl.load(x_ptr + offs[:, None] * HW + j[None, :], mask=m, other=0.0).to(tl.float32)"]),
            "v = tl.sum(acc, axis=1) / HW",
            *epi.lines,
            "tl.store(out_ptr + offs, v, mask=mask)"]
    k = jit(prog, name, ["x_ptr", "out_ptr", *epi.params, "ROWS", "C", "HW", "BLOCK_R: tl.constexpr",
                         "BLOCK_HW: tl.constexpr"], body,
            "mean over H * W of BLOCK_R (n, c) planes, accumulated in fp32")
    fn = prog.add_function(f"run_{base}", "\n".join([
        f"def run_{base}({', '.join(['x', *epi.launcher_params])}):",
        "    x = x.contiguous()",
        "    N, C, H, W = x.shape",
        "    HW = H * W",
        "    ROWS = N * C",
        "    out = torch.empty((N, C), device=x.device, dtype=x.dtype)",
        f"    BLOCK_HW = min(triton.next_power_of_2(HW), {cap})",
        f"    {k}[(triton.cdiv(ROWS, {br}),)]({', '.join(['x', 'out', *epi.launcher_params, 'ROWS', 'C', 'HW'])}, "
        f"BLOCK_R={br}, BLOCK_HW=BLOCK_HW, num_warps={warps_expr(prog, 'BLOCK_HW')})",
        "    return out"]))
    return prog.call(fn, [x, *epi.tensors])


EMITTERS = {
    "max_pool2d": emit_pool,
    "avg_pool2d": emit_pool,
    "max_pool1d": emit_pool,
    "avg_pool1d": emit_pool,
    "global_avg_pool": emit_global_avg_pool,
}
EPILOGUE_OPS = set(EMITTERS)
