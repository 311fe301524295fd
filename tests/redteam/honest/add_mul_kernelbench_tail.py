# task: add_mul_elementwise
# style: KernelBench-style size constants and get_inputs/get_init_inputs left after ModelNew
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    z = tl.load(z_ptr + offs, mask=m)
    tl.store(out_ptr + offs, x * y + z, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y, z):
        x, y, z = x.contiguous(), y.contiguous(), z.contiguous()
        out = torch.empty_like(x)
        n = out.numel()
        fma_kernel[(triton.cdiv(n, 1024),)](x, y, z, out, n, BLOCK=1024)
        return out


batch_size = 4096
dim = 16384


def get_inputs():
    return [torch.randn(batch_size, dim), torch.randn(batch_size, dim), torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
