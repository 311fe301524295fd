# task: tanh_activation
# style: try/except ImportError importing a function (not the module) from wherever this Triton keeps libdevice
import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from triton.language.extra.cuda.libdevice import tanh
except ImportError:
    from triton.language.extra.libdevice import tanh


@triton.jit
def tanh_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tanh(x), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        tanh_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
