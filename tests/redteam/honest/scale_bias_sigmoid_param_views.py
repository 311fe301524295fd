# task: scale_bias_sigmoid
# style: nn.Parameters read in forward; channel index from x.shape arithmetic; 2-D grid
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_bias_sigmoid_kernel(x_ptr, s_ptr, b_ptr, out_ptr, C, HW, BLOCK: tl.constexpr):
    nc = tl.program_id(0)
    c = nc % C
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    x = tl.load(x_ptr + nc * HW + offs, mask=mask)
    y = x * tl.load(s_ptr + c) + tl.load(b_ptr + c)
    tl.store(out_ptr + nc * HW + offs, 1.0 / (1.0 + tl.exp(-y)), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, channels: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.bias = nn.Parameter(torch.randn(channels))

    def forward(self, x):
        N, C, H, W = x.shape
        x = x.contiguous()
        out = torch.empty_like(x)
        scale_bias_sigmoid_kernel[(N * C, triton.cdiv(H * W, 256))](x, self.scale, self.bias, out, C, H * W, BLOCK=256)
        return out
