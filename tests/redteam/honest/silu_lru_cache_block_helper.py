# task: silu
# style: functools.lru_cache on an int-only helper choosing the block size and warps
import torch
import torch.nn as nn
import triton
import triton.language as tl
import functools


@functools.lru_cache(maxsize=None)
def launch_params(n: int) -> tuple:
    block = min(4096, triton.next_power_of_2(max(n, 16)))
    return block, (4 if block <= 1024 else 8)


@triton.jit
def ew_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        block, warps = launch_params(n)
        ew_kernel[(triton.cdiv(n, block),)](x, out, n, BLOCK_SIZE=block, num_warps=warps)
        return out
