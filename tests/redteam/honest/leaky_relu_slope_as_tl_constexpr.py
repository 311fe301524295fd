# task: leaky_relu
# style: a module setting passed to the kernel wrapped as tl.constexpr(...) (specialised at compile time)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_kernel(x_ptr, out_ptr, n_elements, SLOPE: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_elements
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.where(x >= 0, x, x * SLOPE), mask=m)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        leaky_kernel[(triton.cdiv(n, 1024),)](x, out, n, SLOPE=tl.constexpr(self.negative_slope), BLOCK=1024)
        return out
