# task: relu
# style: clone the input, then an in-place ReLU kernel on the copy (load, max with 0, store back)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_inplace_kernel(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask)
    tl.store(x_ptr + offs, tl.maximum(v, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.contiguous().clone()  # relu_ on a copy: the caller's x stays untouched
        n = out.numel()
        relu_inplace_kernel[(triton.cdiv(n, 1024),)](out, n, BLOCK=1024)
        return out
