# task: sum_reduction_dim
# style: histogram-style reduction: every element of a 2-D tile atomic_adds into its column's output (many lanes of one block atomic share an address)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_mid_scatter_kernel(x_ptr, out_ptr, K, N, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    kb = tl.program_id(1)
    nb = tl.program_id(2)
    ks = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    ns = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    m = (ks[:, None] < K) & (ns[None, :] < N)
    v = tl.load(x_ptr + b * K * N + ks[:, None] * N + ns[None, :], mask=m, other=0.0)
    dst = out_ptr + b * N + ns[None, :] + tl.zeros((BLOCK_K, BLOCK_N), tl.int32)
    tl.atomic_add(dst, v, mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, K, N = x.shape
        out = torch.zeros((B, N), device=x.device, dtype=torch.float32)
        sum_mid_scatter_kernel[(B, triton.cdiv(K, 16), triton.cdiv(N, 64))](x, out, K, N, BLOCK_K=16, BLOCK_N=64)
        return out
