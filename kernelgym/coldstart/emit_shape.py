"""Shape ops: `transpose` (x.transpose(1, 2).contiguous(), rank 3), `transpose_hw`
(x.transpose(2, 3).contiguous(), rank 4), and the views `flatten` (x.flatten(1), rank 4 -> 2) and
`merge_batch` (x.reshape(-1, x.shape[-1]), rank 3 -> 2).

A transpose is a kernel that writes the contiguous result: either square tiles (read along the
input's rows, stored along the output's rows, with or without `tl.trans`), or one output element per
lane gathering its source by index arithmetic. Both transposes are the same kernel over a batch of
(R, C) matrices: rank 3 batches over dim 0, rank 4 over dims 0 and 1 together. The views need no
kernel: the walker adds a copy when a chain is nothing but views.
"""

from __future__ import annotations

from kernelgym.coldstart.program import OpCall, Program, UnsupportedOp

__all__ = ["EMITTERS"]

TILES = ((32, 32), (64, 64), (32, 64), (64, 32), (16, 64), (64, 16))


def emit_transpose(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    want = 3 if call.op == "transpose" else 4
    if call.rank != want:
        raise UnsupportedOp(f"{call.op} of rank {call.rank}")
    style, rng = prog.style, prog.style.rng
    variant = rng.choice(("tile", "tile_trans", "flat"))
    comment = ["    # out[b, c, r] = x[b, r, c] over a batch of (R, C) matrices"] if style.comments else []
    if variant == "flat":
        name = "transpose_flat_kernel"
        src = ["@triton.jit",
               f"def {name}(x_ptr, out_ptr, n_elements, R, C, stride_xb, stride_xr, stride_xc, BLOCK: tl.constexpr):",
               *comment,
               "    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)",
               "    mask = offs < n_elements",
               "    r = offs % R",
               "    c = (offs // R) % C",
               "    b = offs // (R * C)",
               "    v = tl.load(x_ptr + b * stride_xb + r * stride_xr + c * stride_xc, mask=mask)",
               "    tl.store(out_ptr + offs, v, mask=mask)"]
        block = style.block
        launch = [f"    grid = (triton.cdiv(n, {block}),)",
                  "    {kernel}[grid](x3, out, n, R, C, x3.stride(0), x3.stride(1), x3.stride(2), "
                  f"BLOCK={block}, num_warps={style.warps})"]
    else:
        br, bc = rng.choice(TILES)
        name = "transpose_tile_kernel" if variant == "tile" else "transpose_trans_kernel"
        if variant == "tile":
            store = ["    tl.store(out_base + offs_c[None, :] * R + offs_r[:, None], tile, mask=mask)"]
        else:
            store = ["    tl.store(out_base + offs_c[:, None] * R + offs_r[None, :], tl.trans(tile), "
                     "mask=tl.trans(mask))"]
        src = ["@triton.jit",
               f"def {name}(x_ptr, out_ptr, R, C, stride_xb, stride_xr, stride_xc, "
               "BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):",
               *comment,
               "    b = tl.program_id(2).to(tl.int64)",
               "    offs_r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)",
               "    offs_c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)",
               "    mask = (offs_r[:, None] < R) & (offs_c[None, :] < C)",
               "    tile = tl.load(x_ptr + b * stride_xb + offs_r[:, None] * stride_xr + offs_c[None, :] * stride_xc, "
               "mask=mask, other=0.0)",
               "    out_base = out_ptr + b * R * C",
               *store]
        warps = 4 if br * bc >= 2048 else 2
        launch = [f"    grid = (triton.cdiv(R, {br}), triton.cdiv(C, {bc}), x3.shape[0])",
                  "    {kernel}[grid](x3, out, R, C, x3.stride(0), x3.stride(1), x3.stride(2), "
                  f"BLOCK_R={br}, BLOCK_C={bc}, num_warps={warps})"]
    kernel = prog.add_kernel(name, "\n".join(src))
    fname = f"run_{call.op}"
    if call.op == "transpose":
        head = ["    x3 = x", "    R, C = x.shape[1], x.shape[2]",
                "    out = torch.empty((x.shape[0], C, R), device=x.device, dtype=x.dtype)"]
    else:
        head = ["    x3 = x.reshape(-1, x.shape[2], x.shape[3])  # (B*C, H, W): a view of a contiguous x",
                "    R, C = x.shape[2], x.shape[3]",
                "    out = torch.empty((x.shape[0], x.shape[1], C, R), device=x.device, dtype=x.dtype)"]
    if variant == "flat":
        head.append("    n = out.numel()")
    fn = prog.add_function(fname, "\n".join([f"def {fname}(x):", *head,
                                             *(line.replace("{kernel}", kernel) for line in launch),
                                             "    return out"]))
    return prog.call(fn, [x])


def emit_flatten(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    if call.rank != 4:
        raise UnsupportedOp(f"flatten of rank {call.rank}")
    return prog.view(x, "{x}.flatten(1)")


def emit_merge_batch(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    if call.rank != 3:
        raise UnsupportedOp(f"merge_batch of rank {call.rank}")
    return prog.view(x, "{x}.reshape(-1, {x}.shape[-1])")


EMITTERS = {"transpose": emit_transpose, "transpose_hw": emit_transpose, "flatten": emit_flatten,
            "merge_batch": emit_merge_batch}
