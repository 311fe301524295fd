"""The convolution family: conv2d and conv1d as implicit GEMMs on `tl.dot`, depthwise conv2d as a
direct per-channel stencil, and the 2x2 stride-2 transposed conv2d as one GEMM whose columns are
(output channel, kernel tap) and whose stores scatter into the doubled output.

Every kernel accumulates in fp32, adds the layer's bias and then the fused epilogue (a run of
following pointwise ops) before its store. Sizes, the kernel size and the padding are read from the
tensors at run time: the answer never bakes in a size of the task. fp32 dots use
`input_precision="ieee"` (no TF32); fp16 operands go to `tl.dot` as they are; bf16 operands are
widened to fp32 and multiplied in TF32, which holds a bf16 significand exactly (the CPU interpreter
has no bf16 dot).

Epilogue placeholders are filled with 2D (or 1D) index tensors of the output tile: `offs` is the
flat NCHW (NCL) index of the output, `chan` the output channel, `col` the index along the last dim.
"""

from __future__ import annotations

from kernelgym.coldstart.emit_pointwise import add_helpers, fill, pointwise_expr, ptr_params
from kernelgym.coldstart.program import OpCall, Program, UnsupportedOp

__all__ = ["EMITTERS", "EPILOGUE_OPS"]


def _dot(prog: Program, a: str, b: str) -> str:
    if prog.dtype == "float32":
        return f'tl.dot({a}, {b}, input_precision="ieee")'
    if prog.dtype == "bfloat16":
        # bf16 operands widened to fp32 are exact in TF32 (8-bit significand in TF32's 11), so this is the
        # bf16 product with fp32 accumulation; Triton's CPU interpreter has no bf16 dot (it multiplies the raw
        # uint16 bits), so the operands are widened in the kernel
        return f'tl.dot({a}.to(tl.float32), {b}.to(tl.float32), input_precision="tf32")'
    return f"tl.dot({a}, {b})"


def _dot_note(prog: Program) -> list[str]:
    """The comment that says why a bf16 kernel names TF32 (always written: TF32 is wrong for fp32 data)."""
    if prog.dtype != "bfloat16":
        return []
    return ["# bf16 tiles are widened to fp32 for tl.dot: TF32 holds a bf16 significand exactly, so the products",
            "# are the bf16 products, accumulated in fp32 (fp32 data would need input_precision=\"ieee\")"]


def _kcap(prog: Program, cap: int) -> int:
    """fp32 tiles (fp32 data, widened bf16) are twice as wide: a 128x128 tile pair with BLOCK_K 64 in
    three pipeline stages would need ~192 KiB of shared memory, so their reduction block stops at 32."""
    return cap if prog.dtype == "float16" else min(cap, 32)


def _batch_fold(prog: Program, npos: str) -> list[str]:
    """Axis 0 runs over (sample, row tile): the batch can outgrow grid axes 1 and 2 (65535)."""
    return [*_comment(prog, "axis 0 = (sample, row tile); axis 1 = column tile"),
            f"tiles_m = tl.cdiv({npos}, BLOCK_M)", "pid = tl.program_id(0)",
            "n = (pid // tiles_m).to(tl.int64)", "pid_m = pid % tiles_m", "pid_n = tl.program_id(1)"]


def _indent(lines: list[str], n: int = 4) -> list[str]:
    return [" " * n + line if line else line for line in lines]


def _epilogue(prog: Program, epilogue: list[OpCall], stem: str) -> tuple[list[str], list[tuple[str, str]], frozenset]:
    """(kernel statements on `v`, extra pointer params (param, forward tensor), index names needed)."""
    exprs = [pointwise_expr(c) for c in epilogue]
    add_helpers(prog, exprs)
    ptrs = ptr_params(exprs)
    needs: frozenset[str] = frozenset().union(*(e.needs for e in exprs)) if exprs else frozenset()
    if not exprs:
        return [], ptrs, needs
    if prog.style.helper_jit:
        helper = f"{stem}_epilogue"
        extra = ["v", "offs", "mask", *(p for p, _ in ptrs), *sorted(needs)]
        body = [line for e in exprs for line in fill(e, "offs", "mask")]
        helper = prog.add_kernel(helper, "\n".join(
            ["@triton.jit", f"def {helper}({', '.join(extra)}):", *_indent(body), "    return v"]))
        return [f"v = {helper}({', '.join(extra)})"], ptrs, needs
    return [line for e in exprs for line in fill(e, "offs", "mask")], ptrs, needs


def _stem(base: str, epilogue: list[OpCall]) -> str:
    return "_".join([base, *(c.op for c in epilogue)])[:48]


def _has_bias(call: OpCall) -> bool:
    return bool(call.args.get("bias", True))


def _comment(prog: Program, text: str) -> list[str]:
    return [f"# {text}"] if prog.style.comments else []


def _launcher(prog: Program, call: OpCall, x: str, name: str, lines: list[str],
              ptrs: list[tuple[str, str]]) -> str:
    """Add `def name(x, weight[, bias], a0, ...)` (its body `lines`) and the forward line calling it."""
    params = ["x", "weight", *(["bias"] if _has_bias(call) else []), *(f"a{i}" for i in range(len(ptrs)))]
    head = [f"def {name}({', '.join(params)}):", "    x = x.contiguous()", "    weight = weight.contiguous()"]
    if _has_bias(call):
        head.append("    bias = bias.contiguous()")
    head += [f"    a{i} = a{i}.contiguous()" for i in range(len(ptrs))]
    fn = prog.add_function(name, "\n".join(head + _indent(lines)))
    args = [x, f"{call.module}.weight", *([f"{call.module}.bias"] if _has_bias(call) else []), *(t for _, t in ptrs)]
    return prog.call(fn, args)


# --- conv2d / conv1d: implicit GEMM -------------------------------------------------------------


def _gemm_conv(call: OpCall, x: str, prog: Program, epilogue: list[OpCall], dims: int) -> str:
    """conv2d (dims=2) or conv1d (dims=1), stride 1, padding k // 2: rows of the GEMM are output
    positions of one sample, columns are output channels, the reduction runs over (channel, tap)."""
    if not call.module:
        raise UnsupportedOp(f"{call.op}: no layer")
    style = prog.style
    base = "conv2d" if dims == 2 else "conv1d"
    stem = _stem(base, epilogue)
    ep_lines, ptrs, needs = _epilogue(prog, epilogue, stem)
    im2col = style.rng.random() < 0.4  # one flattened reduction index vs. a loop per tap
    bias = _has_bias(call)
    autotune = style.autotune

    sp = ["H", "W"] if dims == 2 else ["L"]
    p = ["x_ptr", "w_ptr", *(["bias_ptr"] if bias else []), "out_ptr", *(q for q, _ in ptrs),
         "C_in", *sp, "C_out", "KS", "PAD",
         "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr"]
    b: list[str] = []
    if dims == 2:
        b += _comment(prog, "implicit GEMM: rows = output pixels of one image, cols = output channels")
        b += ["HW = H * W", *_batch_fold(prog, "HW"), "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
              "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)", "mask_m = offs_m < HW", "mask_n = offs_n < C_out",
              "oh = offs_m // W", "ow = offs_m % W", "x_base = x_ptr + n * C_in * HW", "KK = KS * KS",
              "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"] + _dot_note(prog)
        if im2col:
            b += _comment(prog, "reduction index r = (c_in, kh, kw) flattened, the weight's own layout")
            b += ["K_total = C_in * KK",
                  "for r0 in range(0, K_total, BLOCK_K):",
                  "    offs_r = r0 + tl.arange(0, BLOCK_K)",
                  "    mask_r = offs_r < K_total",
                  "    ci = offs_r // KK",
                  "    kh = (offs_r % KK) // KS",
                  "    kw = offs_r % KS",
                  "    ih = oh[:, None] + kh[None, :] - PAD",
                  "    iw = ow[:, None] + kw[None, :] - PAD",
                  "    ok = mask_m[:, None] & mask_r[None, :] & (ih >= 0) & (ih < H) & (iw >= 0) & (iw < W)",
                  "    a = tl.load(x_base + ci[None, :] * HW + ih * W + iw, mask=ok, other=0.0)",
                  "    wt = tl.load(w_ptr + offs_n[None, :] * K_total + offs_r[:, None],",
                  "                 mask=mask_r[:, None] & mask_n[None, :], other=0.0)",
                  f"    acc += {_dot(prog, 'a', 'wt')}"]
        else:
            b += ["for kh in range(0, KS):",
                  "    ih = oh + kh - PAD",
                  "    row_ok = mask_m & (ih >= 0) & (ih < H)",
                  "    for kw in range(0, KS):",
                  "        iw = ow + kw - PAD",
                  "        ok = row_ok & (iw >= 0) & (iw < W)",
                  "        src = ih * W + iw",
                  "        for c0 in range(0, C_in, BLOCK_K):",
                  "            offs_c = c0 + tl.arange(0, BLOCK_K)",
                  "            mask_c = offs_c < C_in",
                  "            a = tl.load(x_base + offs_c[None, :] * HW + src[:, None],",
                  "                        mask=ok[:, None] & mask_c[None, :], other=0.0)",
                  "            wt = tl.load(w_ptr + offs_n[None, :] * (C_in * KK) + offs_c[:, None] * KK + (kh * KS + kw),",
                  "                         mask=mask_c[:, None] & mask_n[None, :], other=0.0)",
                  f"            acc += {_dot(prog, 'a', 'wt')}"]
        npos, colexpr = "HW", "ow[:, None] + offs_n[None, :] * 0"
    else:
        b += _comment(prog, "implicit GEMM: rows = output positions of one sequence, cols = output channels")
        b += [*_batch_fold(prog, "L"), "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)",
              "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)", "mask_m = offs_m < L", "mask_n = offs_n < C_out",
              "x_base = x_ptr + n * C_in * L",
              "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"] + _dot_note(prog)
        if im2col:
            b += _comment(prog, "reduction index r = (c_in, tap) flattened, the weight's own layout")
            b += ["K_total = C_in * KS",
                  "for r0 in range(0, K_total, BLOCK_K):",
                  "    offs_r = r0 + tl.arange(0, BLOCK_K)",
                  "    mask_r = offs_r < K_total",
                  "    ci = offs_r // KS",
                  "    pos = offs_m[:, None] + (offs_r % KS)[None, :] - PAD",
                  "    ok = mask_m[:, None] & mask_r[None, :] & (pos >= 0) & (pos < L)",
                  "    a = tl.load(x_base + ci[None, :] * L + pos, mask=ok, other=0.0)",
                  "    wt = tl.load(w_ptr + offs_n[None, :] * K_total + offs_r[:, None],",
                  "                 mask=mask_r[:, None] & mask_n[None, :], other=0.0)",
                  f"    acc += {_dot(prog, 'a', 'wt')}"]
        else:
            b += ["for t in range(0, KS):",
                  "    pos = offs_m + t - PAD",
                  "    ok = mask_m & (pos >= 0) & (pos < L)",
                  "    for c0 in range(0, C_in, BLOCK_K):",
                  "        offs_c = c0 + tl.arange(0, BLOCK_K)",
                  "        mask_c = offs_c < C_in",
                  "        a = tl.load(x_base + offs_c[None, :] * L + pos[:, None],",
                  "                    mask=ok[:, None] & mask_c[None, :], other=0.0)",
                  "        wt = tl.load(w_ptr + offs_n[None, :] * (C_in * KS) + offs_c[:, None] * KS + t,",
                  "                     mask=mask_c[:, None] & mask_n[None, :], other=0.0)",
                  f"        acc += {_dot(prog, 'a', 'wt')}"]
        npos, colexpr = "L", "offs_m[:, None] + offs_n[None, :] * 0"
    b += ["v = acc"]
    if bias:
        b += ["v = v + tl.load(bias_ptr + offs_n, mask=mask_n, other=0.0).to(tl.float32)[None, :]"]
    b += ["mask = mask_m[:, None] & mask_n[None, :]",
          f"offs = n * C_out * {npos} + offs_n[None, :] * {npos} + offs_m[:, None]"]
    if "chan" in needs:
        b += ["chan = offs_n[None, :] + offs_m[:, None] * 0"]
    if "col" in needs:
        b += [f"col = {colexpr}"]
    if ep_lines:
        b += _comment(prog, " -> ".join(c.op for c in epilogue) + " fused before the store")
    b += ep_lines
    b += ["tl.store(out_ptr + offs, v, mask=mask)"]

    if autotune:
        configs = style.pick((((64, 32, 32, 4), (128, 64, 32, 8), (32, 32, 16, 4)),
                              ((64, 64, 32, 4), (128, 32, 16, 4))))
        deco = ["@triton.autotune(",
                "    configs=[" + ", ".join(f"triton.Config({{'BLOCK_M': {m}, 'BLOCK_N': {nn}, 'BLOCK_K': {k}}}, "
                                            f"num_warps={w})" for m, nn, k, w in configs) + "],",
                f"    key=['C_in', 'C_out', {', '.join(repr(s) for s in sp)}],", ")", "@triton.jit"]
    else:
        deco = ["@triton.jit"]
    kernel = prog.add_kernel(f"{stem}_kernel", "\n".join(
        [*deco, f"def {stem}_kernel({', '.join(p)}):", *_indent(b)]))

    call_args = ["x", "weight", *(["bias"] if bias else []), "out", *(f"a{i}" for i in range(len(ptrs))),
                 "C_in", *sp, "C_out", "KS", "KS // 2"]
    if dims == 2:
        lines = ["B, C_in, H, W = x.shape", "C_out = weight.shape[0]", "KS = weight.shape[2]",
                 "out = torch.empty((B, C_out, H, W), device=x.device, dtype=x.dtype)", "npos = H * W"]
    else:
        lines = ["B, C_in, L = x.shape", "C_out = weight.shape[0]", "KS = weight.shape[2]",
                 "out = torch.empty((B, C_out, L), device=x.device, dtype=x.dtype)", "npos = L"]
    if autotune:
        lines += ["grid = lambda meta: (B * triton.cdiv(npos, meta['BLOCK_M']), triton.cdiv(C_out, meta['BLOCK_N']))",
                  f"{kernel}[grid]({', '.join(call_args)})"]
    else:
        bm = style.pick((32, 64, 64, 128))
        ncap = style.pick((32, 64, 128))
        kcap = _kcap(prog, style.pick((16, 32, 32, 64)))
        warps = style.pick((4, 4, 8))
        lines += [f"BLOCK_M = min({bm}, max(16, triton.next_power_of_2(npos)))",
                  f"BLOCK_N = min({ncap}, max(16, triton.next_power_of_2(C_out)))",
                  f"BLOCK_K = min({kcap}, max(16, triton.next_power_of_2(C_in{' * KS * KS' if dims == 2 else ' * KS'})))"
                  if im2col else f"BLOCK_K = min({kcap}, max(16, triton.next_power_of_2(C_in)))",
                  "grid = (B * triton.cdiv(npos, BLOCK_M), triton.cdiv(C_out, BLOCK_N))",
                  f"{kernel}[grid]({', '.join(call_args)},",
                  f"    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps={warps})"]
    lines += ["return out"]
    return _launcher(prog, call, x, f"run_{stem}", lines, ptrs)


def emit_conv2d(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    return _gemm_conv(call, x, prog, epilogue, 2)


def emit_conv1d(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    return _gemm_conv(call, x, prog, epilogue, 1)


# --- depthwise conv2d: direct stencil on (channel block x pixel block) tiles of one sample -----------


def emit_depthwise_conv2d(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    """A direct stencil: each program owns a (channels x pixels) tile of one sample, so one tap is one
    2D load times a vector of that tap's per-channel weights (few programs, no reduction over channels)."""
    if not call.module:
        raise UnsupportedOp(f"{call.op}: no layer")
    style = prog.style
    stem = _stem("dwconv2d", epilogue)
    ep_lines, ptrs, needs = _epilogue(prog, epilogue, stem)
    bias = _has_bias(call)
    p = ["x_ptr", "w_ptr", *(["bias_ptr"] if bias else []), "out_ptr", *(q for q, _ in ptrs), "C", "H", "W", "KS",
         "PAD", "BLOCK_C: tl.constexpr", "BLOCK_P: tl.constexpr"]
    b = _comment(prog, "one program: BLOCK_C channels x BLOCK_P pixels of one sample; channel c only "
                       "sees its own plane and its own KS x KS taps")
    b += ["tiles_c = tl.cdiv(C, BLOCK_C)",
          "pid = tl.program_id(0)",
          "n = (pid // tiles_c).to(tl.int64)",
          "offs_c = (pid % tiles_c) * BLOCK_C + tl.arange(0, BLOCK_C)",
          "offs_p = tl.program_id(1) * BLOCK_P + tl.arange(0, BLOCK_P)",
          "mask_c = offs_c < C",
          "mask_p = offs_p < H * W",
          "oh = offs_p // W",
          "ow = offs_p % W",
          "HW = H * W",
          "planes = (n * C + offs_c) * HW",
          "x_rows = x_ptr + planes[:, None]",
          "w_rows = w_ptr + offs_c * (KS * KS)",
          "acc = tl.zeros((BLOCK_C, BLOCK_P), dtype=tl.float32)",
          "for kh in range(0, KS):",
          "    ih = oh + kh - PAD",
          "    row_ok = mask_p & (ih >= 0) & (ih < H)",
          "    for kw in range(0, KS):",
          "        iw = ow + kw - PAD",
          "        ok = row_ok & (iw >= 0) & (iw < W)",
          "        wv = tl.load(w_rows + (kh * KS + kw), mask=mask_c, other=0.0).to(tl.float32)",
          "        xv = tl.load(x_rows + (ih * W + iw)[None, :], mask=mask_c[:, None] & ok[None, :], other=0.0)",
          "        acc += xv.to(tl.float32) * wv[:, None]",
          "v = acc"]
    if bias:
        b += ["v = v + tl.load(bias_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[:, None]"]
    b += ["mask = mask_c[:, None] & mask_p[None, :]",
          "offs = planes[:, None] + offs_p[None, :]"]
    if "chan" in needs:
        b += ["chan = offs_c[:, None] + offs_p[None, :] * 0"]
    if "col" in needs:
        b += ["col = ow[None, :] + offs_c[:, None] * 0"]
    if ep_lines:
        b += _comment(prog, " -> ".join(c.op for c in epilogue) + " fused before the store")
    b += ep_lines + ["tl.store(out_ptr + offs, v, mask=mask)"]
    kernel = prog.add_kernel(f"{stem}_kernel", "\n".join(
        ["@triton.jit", f"def {stem}_kernel({', '.join(p)}):", *_indent(b)]))
    call_args = ["x", "weight", *(["bias"] if bias else []), "out", *(f"a{i}" for i in range(len(ptrs))),
                 "C", "H", "W", "KS", "KS // 2"]
    ccap, pcap = style.pick(((8, 256), (16, 128), (16, 64), (32, 64), (4, 512), (16, 256)))
    warps = style.pick((2, 4, 4, 8))
    lines = ["B, C, H, W = x.shape", "KS = weight.shape[2]", "out = torch.empty_like(x)",
             f"BLOCK_C = min({ccap}, triton.next_power_of_2(C))",
             f"BLOCK_P = min({pcap}, triton.next_power_of_2(H * W))",
             "grid = (B * triton.cdiv(C, BLOCK_C), triton.cdiv(H * W, BLOCK_P))",
             f"{kernel}[grid]({', '.join(call_args)}, BLOCK_C=BLOCK_C, BLOCK_P=BLOCK_P, num_warps={warps})",
             "return out"]
    return _launcher(prog, call, x, f"run_{stem}", lines, ptrs)


# --- conv_transpose2d, kernel 2 stride 2: a GEMM over input pixels x (C_out, tap) ---------------


def emit_conv_transpose2d(call: OpCall, x: str, prog: Program, epilogue: list[OpCall]) -> str:
    if not call.module:
        raise UnsupportedOp(f"{call.op}: no layer")
    style = prog.style
    stem = _stem("deconv2x2", epilogue)
    ep_lines, ptrs, needs = _epilogue(prog, epilogue, stem)
    bias = _has_bias(call)
    p = ["x_ptr", "w_ptr", *(["bias_ptr"] if bias else []), "out_ptr", *(q for q, _ in ptrs),
         "C_in", "H", "W", "C_out", "BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr"]
    b = _comment(prog, "kernel 2, stride 2: taps never overlap, so out[n, co, 2i+di, 2j+dj] = "
                       "sum_ci x[n, ci, i, j] * w[ci, co, di, dj]")
    b += _comment(prog, "GEMM rows = input pixels, cols = co * 4 + di * 2 + dj (weight (C_in, C_out, 2, 2) is "
                        "already that matrix)")
    b += ["HW = H * W", *_batch_fold(prog, "HW"), "NCOL = C_out * 4",
          "offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)", "offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)",
          "mask_m = offs_m < HW", "mask_n = offs_n < NCOL", "x_base = x_ptr + n * C_in * HW",
          "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)", *_dot_note(prog),
          "for c0 in range(0, C_in, BLOCK_K):",
          "    offs_c = c0 + tl.arange(0, BLOCK_K)",
          "    mask_c = offs_c < C_in",
          "    a = tl.load(x_base + offs_c[None, :] * HW + offs_m[:, None], mask=mask_m[:, None] & mask_c[None, :],",
          "                other=0.0)",
          "    wt = tl.load(w_ptr + offs_c[:, None] * NCOL + offs_n[None, :], mask=mask_c[:, None] & mask_n[None, :],",
          "                 other=0.0)",
          f"    acc += {_dot(prog, 'a', 'wt')}",
          "co = offs_n // 4",
          "di = (offs_n // 2) % 2",
          "dj = offs_n % 2",
          "oh = 2 * (offs_m // W)[:, None] + di[None, :]",
          "ow = 2 * (offs_m % W)[:, None] + dj[None, :]",
          "OW = 2 * W",
          "OHW = 4 * HW",
          "v = acc"]
    if bias:
        b += ["v = v + tl.load(bias_ptr + co, mask=mask_n, other=0.0).to(tl.float32)[None, :]"]
    b += ["mask = mask_m[:, None] & mask_n[None, :]",
          "offs = n * C_out * OHW + co[None, :] * OHW + oh * OW + ow"]
    if "chan" in needs:
        b += ["chan = co[None, :] + offs_m[:, None] * 0"]
    if "col" in needs:
        b += ["col = ow"]
    if ep_lines:
        b += _comment(prog, " -> ".join(c.op for c in epilogue) + " fused before the store")
    b += ep_lines + ["tl.store(out_ptr + offs, v, mask=mask)"]
    kernel = prog.add_kernel(f"{stem}_kernel", "\n".join(
        ["@triton.jit", f"def {stem}_kernel({', '.join(p)}):", *_indent(b)]))
    call_args = ["x", "weight", *(["bias"] if bias else []), "out", *(f"a{i}" for i in range(len(ptrs))),
                 "C_in", "H", "W", "C_out"]
    bm, ncap, kcap = style.pick((32, 64, 128)), style.pick((32, 64, 128)), _kcap(prog, style.pick((16, 32, 64)))
    warps = style.pick((4, 4, 8))
    lines = ["B, C_in, H, W = x.shape", "C_out = weight.shape[1]",
             "out = torch.empty((B, C_out, 2 * H, 2 * W), device=x.device, dtype=x.dtype)",
             f"BLOCK_M = min({bm}, max(16, triton.next_power_of_2(H * W)))",
             f"BLOCK_N = min({ncap}, max(16, triton.next_power_of_2(C_out * 4)))",
             f"BLOCK_K = min({kcap}, max(16, triton.next_power_of_2(C_in)))",
             "grid = (B * triton.cdiv(H * W, BLOCK_M), triton.cdiv(C_out * 4, BLOCK_N))",
             f"{kernel}[grid]({', '.join(call_args)},",
             f"    BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps={warps})",
             "return out"]
    return _launcher(prog, call, x, f"run_{stem}", lines, ptrs)


EMITTERS = {
    "conv2d": emit_conv2d,
    "conv1d": emit_conv1d,
    "depthwise_conv2d": emit_depthwise_conv2d,
    "conv_transpose2d": emit_conv_transpose2d,
}
EPILOGUE_OPS = {"conv2d", "conv1d", "depthwise_conv2d", "conv_transpose2d"}
