# task: hardtanh
# style: 'from triton import jit' and a bare @jit decorator
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton import jit


@jit
def ew_kernel(x_ptr, out_ptr, n_elements, lo, hi, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.minimum(tl.maximum(x, lo), hi), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        ew_kernel[(triton.cdiv(n, 1024),)](x, out, n, self.min_val, self.max_val, BLOCK_SIZE=1024)
        return out
