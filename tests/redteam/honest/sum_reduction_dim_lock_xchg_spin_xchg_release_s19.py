# task: sum_reduction_dim
# style: lock-guarded split-K: test-and-set by atomic_xchg spin, plain load + add + store, atomic_xchg release
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_locked_kernel(x_ptr, out_ptr, locks_ptr, K, N, NB, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    kb = tl.program_id(1)
    nb = tl.program_id(2)
    ks = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    ns = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    nm = ns < N
    m = (ks[:, None] < K) & nm[None, :]
    v = tl.load(x_ptr + b * K * N + ks[:, None] * N + ns[None, :], mask=m, other=0.0)
    part = tl.sum(v, axis=0)
    lock = locks_ptr + b * NB + nb
    while tl.atomic_xchg(lock, 1) == 1:
        pass
    cur = tl.load(out_ptr + b * N + ns, mask=nm, other=0.0)
    tl.store(out_ptr + b * N + ns, cur + part, mask=nm)
    tl.atomic_xchg(lock, 0)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, K, N = x.shape
        nb = triton.cdiv(N, 64)
        out = torch.zeros((B, N), device=x.device, dtype=torch.float32)
        locks = torch.zeros((B * nb,), device=x.device, dtype=torch.int32)
        sum_locked_kernel[(B, triton.cdiv(K, 16), nb)](x, out, locks, K, N, nb, BLOCK_K=16, BLOCK_N=64)
        return out
