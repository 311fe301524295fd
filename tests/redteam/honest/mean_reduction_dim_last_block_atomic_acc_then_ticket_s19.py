# task: mean_reduction_dim
# style: last-block reduction in the correct order: atomic_add of the partial first, then the ticket; the last ticket's program reads the accumulator by an atomic read
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_acc_ticket_kernel(x_ptr, acc_ptr, count_ptr, out_ptr, K, N, KB, NB,
                           BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    kb = tl.program_id(1)
    nb = tl.program_id(2)
    ks = kb * BLOCK_K + tl.arange(0, BLOCK_K)
    ns = nb * BLOCK_N + tl.arange(0, BLOCK_N)
    nm = ns < N
    m = (ks[:, None] < K) & nm[None, :]
    v = tl.load(x_ptr + b * K * N + ks[:, None] * N + ns[None, :], mask=m, other=0.0)
    tl.atomic_add(acc_ptr + b * N + ns, tl.sum(v, axis=0), mask=nm)
    ticket = tl.atomic_add(count_ptr + b * NB + nb, 1)
    if ticket == KB - 1:
        total = tl.atomic_add(acc_ptr + b * N + ns, tl.zeros((BLOCK_N,), tl.float32), mask=nm)
        tl.store(out_ptr + b * N + ns, total / K, mask=nm)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, K, N = x.shape
        kb, nb = triton.cdiv(K, 16), triton.cdiv(N, 64)
        acc = torch.zeros((B, N), device=x.device, dtype=torch.float32)
        count = torch.zeros((B * nb,), device=x.device, dtype=torch.int32)
        out = torch.empty((B, N), device=x.device, dtype=torch.float32)
        mean_acc_ticket_kernel[(B, kb, nb)](x, acc, count, out, K, N, kb, nb, BLOCK_K=16, BLOCK_N=64)
        return out
