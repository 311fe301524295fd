# task: log_softmax
# style: tl.constexpr module constants (LOG2E, LN2) used inside the kernel; exp2/log2
import torch
import torch.nn as nn
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
LN2 = tl.constexpr(0.6931471805599453)


@triton.jit
def log_softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    s = tl.sum(tl.exp2(z * LOG2E), axis=0)
    tl.store(out_ptr + row * n_cols + cols, z - tl.log2(s) * LN2, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        log_softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK_SIZE=triton.next_power_of_2(x.shape[1]))
        return out
