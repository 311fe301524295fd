# task: linear_bias_relu
# style: @torch.no_grad() on forward; nn.Linear built in __init__ with .weight.t() and .bias read in forward; fused epilogue
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, sxm, sxk, swk, swn, som, son,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + rm[:, None] * sxm + (k + rk)[None, :] * sxk,
                    mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + (k + rk)[:, None] * swk + rn[None, :] * swn,
                    mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, w, acc, input_precision="ieee")
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(out_ptr + rm[:, None] * som + rn[None, :] * son, acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    @torch.no_grad()
    def forward(self, x):
        w = self.fc.weight.t()  # (K, N) view
        M, K = x.shape
        N = w.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 64))
        linear_relu_kernel[grid](x, w, self.fc.bias, out, M, N, K, x.stride(0), x.stride(1), w.stride(0), w.stride(1),
                                 out.stride(0), out.stride(1), BLOCK_M=32, BLOCK_N=64, BLOCK_K=32)
        return out
