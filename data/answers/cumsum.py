import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, N, BLOCK_SIZE: tl.constexpr):
    # One program per row; scan the row block by block, carrying the running total.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    out_row = out_ptr + row * N
    carry = tl.zeros((), dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        s = tl.cumsum(x, axis=0) + carry
        tl.store(out_row + offs, s.to(out_ptr.dtype.element_ty), mask=mask)
        carry = carry + tl.sum(x, axis=0)


def cumsum_last(x: torch.Tensor) -> torch.Tensor:
    x = x.contiguous()
    N = x.shape[-1]
    rows = x.numel() // N
    out = torch.empty_like(x)
    BLOCK_SIZE = min(1024, triton.next_power_of_2(N))
    cumsum_kernel[(rows,)](x, out, N, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return cumsum_last(x)
