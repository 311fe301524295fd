# task: relu
# style: a generic elementwise kernel taking the operation as a `tl.constexpr` argument that is itself a `@triton.jit` function (`kernel[grid](..., FN=relu_op)`), a Triton idiom for reusing one kernel body across activations
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_op(x):
    return tl.maximum(x, 0.0)


@triton.jit
def unary_kernel(x_ptr, out_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, FN(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        unary_kernel[(triton.cdiv(n, 1024),)](x, out, n, FN=relu_op, BLOCK=1024)
        return out
