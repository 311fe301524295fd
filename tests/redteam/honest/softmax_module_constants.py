# task: softmax
# style: module-level constants: __all__, a read-only warps table (dict), a list of autotune configs, a tl.constexpr constant
import torch
import torch.nn as nn
import triton
import triton.language as tl

__all__ = ["ModelNew"]

LOG2E: tl.constexpr = tl.constexpr(1.4426950408889634)
WARPS_FOR_BLOCK = {1024: 4, 2048: 8, 4096: 16}
AUTOTUNE_CONFIGS = [triton.Config({}, num_warps=w) for w in (2, 4, 8)]


@triton.autotune(configs=AUTOTUNE_CONFIGS, key=["n_cols"])
@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, stride, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp2(x * LOG2E)
    tl.store(out_ptr + row * stride + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n_rows, n_cols = x.shape
        softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out
