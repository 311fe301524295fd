# task: leaky_relu
# style: launcher method with constant defaults (block, num_warps) that forward does not pass, a branch on them
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, out_ptr, n_elements, slope, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.where(x >= 0, x, x * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def _launch(self, x, block=1024, num_warps=4):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        if block * 4 > n:
            num_warps = 2
        leaky_kernel[(triton.cdiv(n, block),)](x, out, n, self.negative_slope, BLOCK_SIZE=block, num_warps=num_warps)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._launch(x)
