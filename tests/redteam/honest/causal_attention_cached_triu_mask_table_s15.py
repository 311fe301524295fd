# task: causal_attention
# style: the causal mask as an additive (S, S) table built with torch.triu on the first call for these shapes and kept on the model (a dict keyed by shape), read by a flash-attention kernel; the same table computed on every call is outside the contract (`invalid_answer`, red-team s15), kept it is the model's state
import math
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def flash_attn_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, mask_ptr,
                          stride_qb, stride_qh, stride_qs, stride_qd,
                          stride_kb, stride_kh, stride_ks, stride_kd,
                          stride_vb, stride_vh, stride_vs, stride_vd,
                          stride_ob, stride_oh, stride_os, stride_od,
                          H, S_q, S_k, D, qk_scale,
                          IS_CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                          BLOCK_D: tl.constexpr):
    # Flash-attention forward: one program per (query block, batch*head); online softmax over key blocks.
    start_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    q_base = q_ptr + b * stride_qb + h * stride_qh
    k_base = k_ptr + b * stride_kb + h * stride_kh
    v_base = v_ptr + b * stride_vb + h * stride_vh
    o_base = o_ptr + b * stride_ob + h * stride_oh

    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n0 = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    mask_m = offs_m < S_q
    mask_d = offs_d < D

    q = tl.load(q_base + offs_m[:, None] * stride_qs + offs_d[None, :] * stride_qd,
                mask=mask_m[:, None] & mask_d[None, :], other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)

    hi = S_k
    for start_n in range(0, hi, BLOCK_N):
        offs_n = start_n + offs_n0
        mask_n = offs_n < S_k
        kt = tl.load(k_base + offs_n[None, :] * stride_ks + offs_d[:, None] * stride_kd,
                     mask=mask_n[None, :] & mask_d[:, None], other=0.0)
        # qk_scale = log2(e) / sqrt(D): scores are kept in base 2 so exp2 can be used.
        s = tl.dot(q, kt, input_precision="ieee") * qk_scale
        # additive mask (0 or -inf), built once per call on the host side: s is in base-2 units, -inf stays -inf
        bias = tl.load(mask_ptr + offs_m[:, None] * S_k + offs_n[None, :],
                       mask=mask_m[:, None] & mask_n[None, :], other=0.0)
        s = tl.where(mask_n[None, :], s + bias, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(v_base + offs_n[:, None] * stride_vs + offs_d[None, :] * stride_vd,
                    mask=mask_n[:, None] & mask_d[None, :], other=0.0)
        acc = acc * alpha[:, None]
        acc = tl.dot(p, v, acc, input_precision="ieee")
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_os + offs_d[None, :] * stride_od, out,
             mask=mask_m[:, None] & mask_d[None, :])


@triton.jit
def transpose_last2_kernel(src_ptr, dst_ptr, H, S, D,
                           stride_sb, stride_sh, stride_ss, stride_sd,
                           stride_db, stride_dh, stride_dd, stride_ds,
                           BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    # dst[b, h, d, s] = src[b, h, s, d]: tiled, coalesced transpose of the last two dims.
    offs_s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    bh = tl.program_id(2)
    b = (bh // H).to(tl.int64)
    h = (bh % H).to(tl.int64)
    mask = (offs_s[:, None] < S) & (offs_d[None, :] < D)
    tile = tl.load(src_ptr + b * stride_sb + h * stride_sh + offs_s[:, None] * stride_ss + offs_d[None, :] * stride_sd,
                   mask=mask, other=0.0)
    tl.store(dst_ptr + b * stride_db + h * stride_dh + offs_d[:, None] * stride_dd + offs_s[None, :] * stride_ds,
             tl.trans(tile), mask=tl.trans(mask))


def transpose_last2(x: torch.Tensor) -> torch.Tensor:
    B, H, S, D = x.shape
    dst = torch.empty((B, H, D, S), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(S, 64), triton.cdiv(D, 64), B * H)
    transpose_last2_kernel[grid](x, dst, H, S, D,
                                 x.stride(0), x.stride(1), x.stride(2), x.stride(3),
                                 dst.stride(0), dst.stride(1), dst.stride(2), dst.stride(3),
                                 BLOCK_S=64, BLOCK_D=64, num_warps=4)
    return dst


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, is_causal: bool, cache: dict) -> torch.Tensor:
    B, H, S_q, D = q.shape
    S_k = k.shape[2]
    # K^T as a (B, H, D, S_k) copy so the K tiles of Q @ K^T are S-contiguous, which the fp32 FMA
    # dot path consumes much faster; the view below keeps K's logical (B, H, S_k, D) indexing.
    k = transpose_last2(k).transpose(2, 3)
    out = torch.empty((B, H, S_q, D), device=q.device, dtype=q.dtype)
    BLOCK_M, BLOCK_N = 64, 32
    BLOCK_D = max(triton.next_power_of_2(D), 16)
    qk_scale = 1.4426950408889634 / math.sqrt(D)
    # The causal mask as an additive (S_q, S_k) table: 0 on and below the diagonal, -inf above it.
    key = (S_q, S_k, str(q.device))
    if key not in cache:
        cache[key] = torch.triu(torch.full((S_q, S_k), float("-inf"), device=q.device, dtype=torch.float32), diagonal=1)
    mask = cache[key]
    grid = (triton.cdiv(S_q, BLOCK_M), B * H)
    flash_attn_fwd_kernel[grid](q, k, v, out, mask,
                                q.stride(0), q.stride(1), q.stride(2), q.stride(3),
                                k.stride(0), k.stride(1), k.stride(2), k.stride(3),
                                v.stride(0), v.stride(1), v.stride(2), v.stride(3),
                                out.stride(0), out.stride(1), out.stride(2), out.stride(3),
                                H, S_q, S_k, D, qk_scale,
                                IS_CAUSAL=is_causal, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D,
                                num_warps=4, num_stages=2)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.masks = {}

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return flash_attention(q, k, v, True, self.masks)
