# task: attention
# style: Hopper-style flash attention on host-side tensor descriptors (triton.tools.tensor_descriptor.TensorDescriptor, as in Triton's fused-attention tutorial; `desc.load` / `desc.store` in the kernel), with a pointer-based fallback when a row is not 16-byte aligned. The capability scan allows triton.tools.tensor_descriptor and the replay records each descriptor as a view of its base buffer (shape, strides, block shape, padding) and rebuilds it on its own buffers (refused before 2026-11-27).
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def attn_tma_kernel(q_desc, k_desc, v_desc, o_desc, S, sm_scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    bh = tl.program_id(1)
    m0 = tl.program_id(0) * BLOCK_M
    q = q_desc.load([bh, m0, 0]).reshape(BLOCK_M, BLOCK_D)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for n0 in range(0, S, BLOCK_N):
        k = k_desc.load([bh, n0, 0]).reshape(BLOCK_N, BLOCK_D)
        v = v_desc.load([bh, n0, 0]).reshape(BLOCK_N, BLOCK_D)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        s = tl.where((n0 + tl.arange(0, BLOCK_N))[None, :] < S, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    o_desc.store([bh, m0, 0], (acc / l_i[:, None]).reshape(1, BLOCK_M, BLOCK_D))


@triton.jit
def attn_ptr_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, D, sm_scale,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr):
    bh = tl.program_id(1)
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, BLOCK_D)
    base = bh * S * D
    q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :],
                mask=(offs_m[:, None] < S) & (offs_d[None, :] < D), other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    for n0 in range(0, S, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        kv_mask = (offs_n[:, None] < S) & (offs_d[None, :] < D)
        k = tl.load(k_ptr + base + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + offs_n[:, None] * D + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="ieee") * sm_scale
        s = tl.where(offs_n[None, :] < S, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        m_i = m_new
    tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], acc / l_i[:, None],
             mask=(offs_m[:, None] < S) & (offs_d[None, :] < D))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
        B, H, S, D = q.shape
        out = torch.empty_like(q)
        BLOCK_M, BLOCK_N = 32, 32
        BLOCK_D = max(16, triton.next_power_of_2(D))
        grid = (triton.cdiv(S, BLOCK_M), B * H)
        sm_scale = 1.0 / math.sqrt(D)
        if (D * q.element_size()) % 16 == 0:  # TMA needs 16-byte aligned rows
            q3, k3, v3, o3 = (t.view(B * H, S, D) for t in (q, k, v, out))
            q_desc = TensorDescriptor.from_tensor(q3, [1, BLOCK_M, BLOCK_D])
            k_desc = TensorDescriptor.from_tensor(k3, [1, BLOCK_N, BLOCK_D])
            v_desc = TensorDescriptor.from_tensor(v3, [1, BLOCK_N, BLOCK_D])
            o_desc = TensorDescriptor.from_tensor(o3, [1, BLOCK_M, BLOCK_D])
            attn_tma_kernel[grid](q_desc, k_desc, v_desc, o_desc, S, sm_scale,
                                  BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D)
        else:
            attn_ptr_kernel[grid](q, k, v, out, S, D, sm_scale, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=BLOCK_D)
        return out
