# task: sum_reduction_dim
# style: split-K style atomic_add reduction with @triton.autotune(reset_to_zero=..., several configs)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[triton.Config({"BLOCK_K": 32}, num_warps=2), triton.Config({"BLOCK_K": 64}, num_warps=4)],
    key=["K", "N"],
    reset_to_zero=["out_ptr"],
)
@triton.jit
def sum_mid_kernel(x_ptr, out_ptr, K, N, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    kb = tl.program_id(1)
    nb = tl.program_id(2)
    ks = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    ns = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    m = (ks[:, None] < K) & (ns[None, :] < N)
    v = tl.load(x_ptr + b * K * N + ks[:, None] * N + ns[None, :], mask=m, other=0.0)
    tl.atomic_add(out_ptr + b * N + ns, tl.sum(v, axis=0), mask=ns < N)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, K, N = x.shape
        out = torch.zeros((B, N), device=x.device, dtype=torch.float32)
        grid = lambda meta: (B, triton.cdiv(K, meta["BLOCK_K"]), triton.cdiv(N, 64))
        sum_mid_kernel[grid](x, out, K, N, BLOCK_N=64)
        return out
