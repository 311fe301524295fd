"""The matmul family: `linear` (x @ W^T + b over the last dim, rank 2 or 3), `matmul` (x @ y, rank 2),
`bmm` (torch.bmm(x, y), rank 3) and `gram` (torch.bmm(x, x^T) / L ** 0.5, rank 3), as one tiled
`tl.dot` kernel per op with every tail masked.

Every operand is read through its strides, so no operand is copied: the weight of `linear` is read
as W^T (B[k, n] = W[n, k]) and the second operand of `gram` is x itself with its last two strides
swapped. The accumulator is fp32 (`input_precision="ieee"` for fp32 inputs, so no TF32); the layer's
bias, gram's scale and the epilogue (the following pointwise ops, fused before the store) run on it.

The epilogue's index placeholders are 2-D tiles: `{offs}` is the flat index into the contiguous
output (the batch offset included for the batched ops), `{col}` the output column, `{mask}` the
tile's bounds.
"""

from __future__ import annotations

from kernelgym.coldstart.emit_pointwise import add_helpers, fill, pointwise_expr, ptr_params
from kernelgym.coldstart.program import OpCall, Program, UnsupportedOp

__all__ = ["EMITTERS", "EPILOGUE_OPS", "emit_matmul"]

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages): fp32 tiles stay within shared memory at their stage count
CONFIGS_HALF = ((128, 128, 32, 8, 3), (128, 128, 64, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4),
                (64, 64, 64, 4, 3), (128, 256, 32, 8, 3), (64, 64, 32, 4, 4))
CONFIGS_F32 = ((128, 128, 32, 8, 3), (128, 64, 32, 4, 3), (64, 128, 32, 4, 3), (64, 64, 32, 4, 4),
               (64, 64, 64, 4, 3), (128, 128, 16, 8, 4), (32, 64, 32, 4, 4))
GROUPS = (4, 8, 8, 16)

_OPERANDS = {
    # op: (what the kernel multiplies, as a comment)
    "linear": "out[m, n] = sum_k x[m, k] * W[n, k] (+ bias[n]); W is read through its strides as W^T",
    "matmul": "out[m, n] = sum_k x[m, k] * y[k, n]",
    "bmm": "out[b, m, n] = sum_k x[b, m, k] * y[b, k, n]",
    "gram": "out[b, m, n] = sum_k x[b, m, k] * x[b, n, k] / sqrt(L)",
}


def emit_matmul(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    op = call.op
    if op not in _OPERANDS:
        raise UnsupportedOp(f"no matmul writer for {op}")
    if op == "linear" and call.rank not in (2, 3) or op == "matmul" and call.rank != 2 \
            or op in ("bmm", "gram") and call.rank != 3:
        raise UnsupportedOp(f"{op} of rank {call.rank}")
    style, rng = prog.style, prog.style.rng
    batched = op in ("bmm", "gram")
    has_bias = op == "linear" and bool(call.args.get("bias", True))
    exprs = [pointwise_expr(c) for c in epilogue]
    add_helpers(prog, exprs)
    ptrs = ptr_params(exprs)
    needs = frozenset().union(*(e.needs for e in exprs)) if exprs else frozenset()
    if "chan" in needs:
        raise UnsupportedOp("a per-channel epilogue after a matmul")
    fp32 = prog.dtype == "float32"
    configs = CONFIGS_F32 if fp32 else CONFIGS_HALF
    autotune = style.autotune or rng.random() < 0.2
    swizzle = rng.random() < 0.6
    group = rng.choice(GROUPS)
    cfg = rng.choice(configs)
    pointer_walk = rng.random() < 0.5  # advance the tile pointers vs recompute them from k
    even_k = rng.random() < 0.25  # a heuristic drops the K masks when BLOCK_K divides K
    dot_acc = rng.random() < 0.5  # tl.dot(a, b, acc) vs acc += tl.dot(a, b)
    helper = style.helper_jit and bool(exprs)
    prec = ', input_precision="ieee"' if fp32 else ""
    bf16 = prog.dtype == "bfloat16"
    if bf16:
        # bf16 tiles are upcast before the dot (Triton's CPU interpreter multiplies bf16 tiles as raw
        # bits); a bf16 value is exact in tf32, so the tf32 dot of upcast tiles is the bf16 product
        prec = ', input_precision="tf32"'

    base = "_".join([op, *(c.op for c in epilogue)])[:48]
    name = f"{base}_kernel"

    params = ["a_ptr", "b_ptr", "out_ptr"]
    if has_bias:
        params.append("bias_ptr")
    params += [p for p, _ in ptrs]
    params += ["M", "N", "K"]
    if batched:
        params += ["stride_ab"]
    params += ["stride_am", "stride_ak"]
    if batched:
        params += ["stride_bb"]
    params += ["stride_bk", "stride_bn"]
    if op == "gram":
        params.append("inv_scale")
    params += ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr"]
    if swizzle:
        params.append("GROUP_M: tl.constexpr")
    if even_k:
        params.append("EVEN_K: tl.constexpr")

    body: list[str] = []
    if style.comments:
        body.append(f"# {_OPERANDS[op]}")
    if swizzle:
        if style.comments:
            body.append("# grouped tile order: GROUP_M row-tiles share the B tiles they read while in cache")
        body += ["pid = tl.program_id(0)",
                 "num_pid_m = tl.cdiv(M, BLOCK_M)",
                 "num_pid_n = tl.cdiv(N, BLOCK_N)",
                 "num_pid_in_group = GROUP_M * num_pid_n",
                 "group_id = pid // num_pid_in_group",
                 "first_pid_m = group_id * GROUP_M",
                 "group_size_m = min(num_pid_m - first_pid_m, GROUP_M)",
                 "pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)",
                 "pid_n = (pid % num_pid_in_group) // group_size_m"]
        if batched:
            body.append("batch = tl.program_id(1).to(tl.int64)")
    else:
        body += ["pid_m = tl.program_id(0)", "pid_n = tl.program_id(1)"]
        if batched:
            body.append("batch = tl.program_id(2).to(tl.int64)")
    body += ["offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
             "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
             "offs_k = tl.arange(0, BLOCK_K)",
             "mask_m = offs_m < M",
             "mask_n = offs_n < N"]
    a_base = "a_ptr + batch * stride_ab" if batched else "a_ptr"
    b_base = "b_ptr + batch * stride_bb" if batched else "b_ptr"
    # int64 row offsets: a flattened row can be long enough for m * stride to pass 2**31
    a_rows = "offs_m[:, None].to(tl.int64) * stride_am"
    b_cols = "offs_n[None, :].to(tl.int64) * stride_bn"
    mask_a = "mask_m[:, None] & (offs_k[None, :] < K - k0)"
    mask_b = "(offs_k[:, None] < K - k0) & mask_n[None, :]"
    ab = "a.to(tl.float32), b.to(tl.float32)" if bf16 else "a, b"
    dot = f"acc = tl.dot({ab}, acc{prec})" if dot_acc else f"acc += tl.dot({ab}{prec})"
    body.append("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)")
    def loads(a_src: str, b_src: str) -> list[str]:
        full = [f"a = tl.load({a_src}, mask={mask_a}, other=0.0)", f"b = tl.load({b_src}, mask={mask_b}, other=0.0)"]
        if not even_k:
            return full
        return ["if EVEN_K:",
                f"    a = tl.load({a_src}, mask=mask_m[:, None], other=0.0)",
                f"    b = tl.load({b_src}, mask=mask_n[None, :], other=0.0)",
                "else:", *(f"    {line}" for line in full)]

    if bf16:  # always said: TF32 would be wrong for fp32 data
        body += ["# bf16 tiles are widened to fp32 for tl.dot: TF32 holds a bf16 significand exactly, so the",
                 "# products are the bf16 products, accumulated in fp32 (fp32 data needs input_precision=\"ieee\")"]
    if pointer_walk:
        body += [f"a_ptrs = {a_base} + {a_rows} + offs_k[None, :] * stride_ak",
                 f"b_ptrs = {b_base} + offs_k[:, None] * stride_bk + {b_cols}",
                 "for k0 in range(0, K, BLOCK_K):",
                 *(f"    {line}" for line in loads("a_ptrs", "b_ptrs")),
                 f"    {dot}",
                 "    a_ptrs += BLOCK_K * stride_ak",
                 "    b_ptrs += BLOCK_K * stride_bk"]
    else:
        body += ["for kt in range(0, tl.cdiv(K, BLOCK_K)):",
                 "    k0 = kt * BLOCK_K",
                 *(f"    {line}" for line in loads(f"{a_base} + {a_rows} + (k0 + offs_k[None, :]) * stride_ak",
                                                   f"{b_base} + (k0 + offs_k[:, None]) * stride_bk + {b_cols}")),
                 f"    {dot}"]
    body += ["v = acc"]
    if op == "gram":
        body.append("v = v * inv_scale")
    if has_bias:
        body.append("v = v + tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]")
    body.append("mask = mask_m[:, None] & mask_n[None, :]")
    if style.comments:
        body.append("# flat index into the contiguous output" + (" (batch offset included)" if batched else ""))
    row = "batch * M * N + offs_m[:, None] * N" if batched else "offs_m[:, None] * N"
    body.append(f"offs = {row} + offs_n[None, :]")
    if "col" in needs:
        body.append("col = offs_n[None, :]")
    if exprs:
        if style.comments:
            body.append(f"# fused epilogue: {' -> '.join(c.op for c in epilogue)}")
        if helper:
            hname = f"{base}_epilogue"
            extra = [p for p, _ in ptrs] + sorted(needs)
            lines = [line for e in exprs for line in fill(e, "offs", "mask")]
            hname = prog.add_kernel(hname, "\n".join([
                "@triton.jit", f"def {hname}({', '.join(['v', 'offs', 'mask', *extra])}):",
                *(f"    {line}" for line in lines), "    return v"]))
            body.append(f"v = {hname}({', '.join(['v', 'offs', 'mask', *extra])})")
        else:
            body += [line for e in exprs for line in fill(e, "offs", "mask")]
    body.append("tl.store(out_ptr + offs, v, mask=mask)")

    if autotune:
        chosen = rng.sample(configs, 3)
        keys = "{'BLOCK_M': %d, 'BLOCK_N': %d, 'BLOCK_K': %d" + (f", 'GROUP_M': {group}" if swizzle else "") + "}"
        deco = ["@triton.autotune(", "    configs=["]
        deco += [f"        triton.Config({keys % (bm, bn, bk)}, num_warps={w}, num_stages={s}),"
                 for bm, bn, bk, w, s in chosen]
        deco += ["    ],", "    key=['M', 'N', 'K'],", ")"]
    else:
        deco = []
    if even_k:
        deco.append("@triton.heuristics({'EVEN_K': lambda args: args['K'] % args['BLOCK_K'] == 0})")
    deco.append("@triton.jit")
    kernel = prog.add_kernel(name, "\n".join([*deco, f"def {name}({', '.join(params)}):",
                                              *(f"    {line}" for line in body)]))

    # --- the launcher -------------------------------------------------------------------------
    extra_names = [f"e{i}" for i in range(len(ptrs))]
    if op == "linear":
        fn_params = ["x", "weight", *(["bias"] if has_bias else []), *extra_names]
        head = ["    K = x.shape[-1]",
                "    a = x.reshape(-1, K)",
                "    M = a.shape[0]",
                "    N = weight.shape[0]",
                "    out = torch.empty((M, N), device=x.device, dtype=x.dtype)"]
        b_arg = "weight"
        strides = ["a.stride(0)", "a.stride(1)", "weight.stride(1)", "weight.stride(0)"]
        ret = "out.view(*x.shape[:-1], N)" if call.rank == 3 else "out"
        fwd = [x, f"{call.module}.weight", *([f"{call.module}.bias"] if has_bias else [])]
    elif op == "matmul":
        fn_params = ["a", "b", *extra_names]
        head = ["    M, K = a.shape", "    N = b.shape[1]",
                "    out = torch.empty((M, N), device=a.device, dtype=a.dtype)"]
        b_arg = "b"
        strides = ["a.stride(0)", "a.stride(1)", "b.stride(0)", "b.stride(1)"]
        ret = "out"
        fwd = [x, call.inputs[0]]
    elif op == "bmm":
        fn_params = ["a", "b", *extra_names]
        head = ["    B, M, K = a.shape", "    N = b.shape[2]",
                "    out = torch.empty((B, M, N), device=a.device, dtype=a.dtype)"]
        b_arg = "b"
        strides = ["a.stride(0)", "a.stride(1)", "a.stride(2)", "b.stride(0)", "b.stride(1)", "b.stride(2)"]
        ret = "out"
        fwd = [x, call.inputs[0]]
    else:  # gram
        fn_params = ["a", *extra_names]
        head = ["    B, M, K = a.shape", "    N = M",
                "    out = torch.empty((B, M, N), device=a.device, dtype=a.dtype)"]
        b_arg = "a"
        # the second operand is x^T: B[k, n] = x[b, n, k]
        strides = ["a.stride(0)", "a.stride(1)", "a.stride(2)", "a.stride(0)", "a.stride(2)", "a.stride(1)"]
        ret = "out"
        fwd = [x]
    args = ["a", b_arg, "out", *(["bias"] if has_bias else []), *extra_names, "M", "N", "K", *strides]
    if op == "gram":
        head.append("    inv_scale = 1.0 / K ** 0.5")
        args.append("inv_scale")
    if autotune:
        tiles = "triton.cdiv(M, meta['BLOCK_M']) * triton.cdiv(N, meta['BLOCK_N'])" if swizzle else \
            "triton.cdiv(M, meta['BLOCK_M']), triton.cdiv(N, meta['BLOCK_N'])"
        grid = f"    grid = lambda meta: ({tiles}, {'B' if batched else ''})" if batched else \
            f"    grid = lambda meta: ({tiles}{',' if swizzle else ''})"
        meta = ""
    else:
        bm, bn, bk, w, s = cfg
        head.append(f"    BLOCK_M, BLOCK_N, BLOCK_K = {bm}, {bn}, {bk}")
        tiles = "triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)" if swizzle else \
            "triton.cdiv(M, BLOCK_M), triton.cdiv(N, BLOCK_N)"
        grid = f"    grid = ({tiles}, B)" if batched else f"    grid = ({tiles}{',' if swizzle else ''})"
        meta = ", BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K" + (f", GROUP_M={group}" if swizzle else "") \
            + f", num_warps={w}, num_stages={s}"
    fname = f"run_{base}"
    src = [f"def {fname}({', '.join(fn_params)}):", *head, grid,
           f"    {kernel}[grid]({', '.join(args)}{meta})", f"    return {ret}"]
    fn = prog.add_function(fname, "\n".join(src))
    return prog.call(fn, [*fwd, *(t for _, t in ptrs)])


EMITTERS = {op: emit_matmul for op in ("linear", "matmul", "bmm", "gram")}
EPILOGUE_OPS = {"linear", "matmul", "bmm", "gram"}
