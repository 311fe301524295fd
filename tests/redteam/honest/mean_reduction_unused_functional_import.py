# task: mean_reduction_dim
# style: an unused 'import torch.nn.functional as F' and a 2-D grid
import torch
import torch.nn as nn
import triton
import triton.language as tl
import torch.nn.functional as F


@triton.jit
def mean_dim_kernel(x_ptr, out_ptr, D1, D2, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Reduce the middle axis of a (B, D1, D2) tensor; one program per (batch, column block)."""
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    acc = tl.zeros((BLOCK_C,), tl.float32)
    for r0 in tl.range(0, D1, BLOCK_R):
        rows = r0 + tl.arange(0, BLOCK_R)
        mask = (rows[:, None] < D1) & (cols[None, :] < D2)
        x = tl.load(x_ptr + b * D1 * D2 + rows[:, None] * D2 + cols[None, :], mask=mask, other=0.0)
        acc = acc + tl.sum(x, axis=0)
    tl.store(out_ptr + b * D2 + cols, acc / D1, mask=cols < D2)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, D1, D2 = x.shape
        x = x.contiguous()
        out = torch.empty((B, D2), device=x.device, dtype=x.dtype)
        mean_dim_kernel[(B, triton.cdiv(D2, 64))](x, out, D1, D2, BLOCK_R=16, BLOCK_C=64)
        return out
