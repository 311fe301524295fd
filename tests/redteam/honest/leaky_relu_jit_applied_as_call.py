# task: leaky_relu
# style: triton.jit applied as a call (k = triton.jit(f)) instead of a decorator
import torch
import torch.nn as nn
import triton
import triton.language as tl


def _leaky_relu(x_ptr, out_ptr, n_elements, slope, BLOCK_SIZE: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x >= 0, x, x * slope), mask=mask)


leaky_relu_kernel = triton.jit(_leaky_relu)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        leaky_relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, self.negative_slope, BLOCK_SIZE=1024)
        return out
