# task: sigmoid
# style: @triton.heuristics deciding whether the bounds mask is needed
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"EVEN": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})
@triton.jit
def sigmoid_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr, EVEN: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    if EVEN:
        x = tl.load(x_ptr + offsets)
        tl.store(out_ptr + offsets, 1.0 / (1.0 + tl.exp(-x)))
    else:
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, 1.0 / (1.0 + tl.exp(-x)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        sigmoid_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out
