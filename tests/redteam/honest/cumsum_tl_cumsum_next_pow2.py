# task: cumsum
# style: tl.cumsum scan, triton.next_power_of_2 block, .view() reshapes
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cumsum_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, tl.cumsum(x, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n_cols = x.shape[-1]
        x2 = x.contiguous().view(-1, n_cols)
        out = torch.empty_like(x2)
        cumsum_kernel[(x2.shape[0],)](x2, out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
