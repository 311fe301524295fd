# task: sum_reduction_dim
# style: typing annotations, docstrings, Optional/int helpers, reshape and x.shape arithmetic
import torch
import torch.nn as nn
import triton
import triton.language as tl
from typing import Optional


@triton.jit
def sum_dim_kernel(x_ptr, out_ptr, D1, D2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Reduce the middle axis of a (B, D1, D2) tensor; one program per (batch, column block)."""
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), tl.float32)
    for r0 in tl.range(0, D1, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < D1) & (cols[None, :] < D2)
        x = tl.load(x_ptr + b * D1 * D2 + rows[:, None] * D2 + cols[None, :], mask=mask, other=0.0)
        acc = acc + tl.sum(x, axis=0)
    tl.store(out_ptr + b * D2 + cols, acc, mask=cols < D2)


def reduce_middle(x: torch.Tensor, block_c: Optional[int] = None) -> torch.Tensor:
    """Sum over dim 1 of a 3-D tensor."""
    B, D1, D2 = x.shape
    x = x.contiguous()
    out = torch.empty((B, D2), device=x.device, dtype=x.dtype)
    bc = block_c or min(128, triton.next_power_of_2(D2))
    sum_dim_kernel[(B, triton.cdiv(D2, bc))](x, out, D1, D2, BLOCK_R=32, BLOCK_C=bc)
    return out


class ModelNew(nn.Module):
    """Sum over one dimension (the task's dim 1)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dim != 1 or x.dim() != 3:
            raise ValueError("this kernel reduces dim 1 of a 3-D tensor")
        return reduce_middle(x)
