# task: sum_reduction_dim
# style: split reduction with atomic_add into a float64 workspace kept on the model (allocated once, `zero_()` every call), the output its `.to(x.dtype)` copy: a torch dtype copy of memory the kernel wrote in the call, which the contract allows
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def partial_sum_kernel(x_ptr, acc_ptr, R, N, CHUNK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_o = tl.program_id(0)
    pid_n = tl.program_id(1)
    pid_r = tl.program_id(2)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_r = pid_r * CHUNK_R + tl.arange(0, CHUNK_R)
    mask = (offs_r[:, None] < R) & (offs_n[None, :] < N)
    base = x_ptr + pid_o.to(tl.int64) * R * N
    vals = tl.load(base + offs_r[:, None].to(tl.int64) * N + offs_n[None, :], mask=mask, other=0.0)
    tl.atomic_add(acc_ptr + pid_o.to(tl.int64) * N + offs_n, tl.sum(vals.to(tl.float64), axis=0), mask=offs_n < N)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim
        self.acc = None  # a float64 workspace kept across calls, cleared by every call

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        d = self.dim % x.dim()
        shape = x.shape
        outer = math.prod(shape[:d])
        R = shape[d]
        N = math.prod(shape[d + 1:])
        if self.acc is None or self.acc.numel() != outer * N or self.acc.device != x.device:
            self.acc = torch.empty(outer * N, dtype=torch.float64, device=x.device)
        acc = self.acc
        acc.zero_()
        CHUNK_R = 32
        BLOCK_N = min(128, triton.next_power_of_2(N))
        partial_sum_kernel[(outer, triton.cdiv(N, BLOCK_N), triton.cdiv(R, CHUNK_R))](
            x, acc, R, N, CHUNK_R=CHUNK_R, BLOCK_N=BLOCK_N)
        return acc.to(x.dtype).view(tuple(shape[:d]) + tuple(shape[d + 1:]))
