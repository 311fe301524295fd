# task: depthwise_conv2d
# style: the input zero-padded with `F.pad` before the convolution kernel (input preparation, as cuDNN-free conv answers commonly do), the kernel then reading an unpadded window; `aten.constant_pad_nd` only allocates, fills and copies
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def depthwise_conv2d_kernel(x_ptr, w_ptr, b_ptr, out_ptr,
                            C, H, W, OH, OW, KH, KW, PAD,
                            BLOCK_H: tl.constexpr, BLOCK_W: tl.constexpr):
    # One program = one BLOCK_H x BLOCK_W output tile of one (batch, channel) plane.
    pid_w = tl.program_id(0)
    pid_h = tl.program_id(1)
    plane = tl.program_id(2).to(tl.int64)
    c = plane % C
    offs_h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_w = pid_w * BLOCK_W + tl.arange(0, BLOCK_W)
    out_mask = (offs_h < OH)[:, None] & (offs_w < OW)[None, :]
    x_base = x_ptr + plane * H * W
    w_base = w_ptr + c * KH * KW
    acc = tl.zeros((BLOCK_H, BLOCK_W), dtype=tl.float32)
    for kh in range(0, KH):
        ih = offs_h + kh - PAD
        mh = (ih >= 0) & (ih < H)
        for kw in range(0, KW):
            iw = offs_w + kw - PAD
            mw = (iw >= 0) & (iw < W)
            wv = tl.load(w_base + kh * KW + kw)
            xv = tl.load(x_base + ih[:, None] * W + iw[None, :],
                         mask=out_mask & mh[:, None] & mw[None, :], other=0.0)
            acc += xv * wv
    acc += tl.load(b_ptr + c)
    out_base = out_ptr + plane * OH * OW
    tl.store(out_base + offs_h[:, None] * OW + offs_w[None, :], acc, mask=out_mask)


def depthwise_conv2d(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, padding: int) -> torch.Tensor:
    x = x.contiguous()
    weight = weight.contiguous()
    bias = bias.contiguous()
    B, C, H, W = x.shape
    KH = weight.shape[2]
    KW = weight.shape[3]
    OH = H + 2 * padding - KH + 1
    OW = W + 2 * padding - KW + 1
    out = torch.empty((B, C, OH, OW), device=x.device, dtype=x.dtype)
    BLOCK_W = min(128, triton.next_power_of_2(OW))
    BLOCK_H = min(16, triton.next_power_of_2(OH))
    # Zero-pad the input once (input preparation), so that the kernel reads an unpadded window.
    xp = F.pad(x, (padding, padding, padding, padding))
    grid = (triton.cdiv(OW, BLOCK_W), triton.cdiv(OH, BLOCK_H), B * C)
    depthwise_conv2d_kernel[grid](xp, weight, bias, out, C, H + 2 * padding, W + 2 * padding, OH, OW, KH, KW, 0,
                                  BLOCK_H=BLOCK_H, BLOCK_W=BLOCK_W, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=True)
        self.padding = kernel_size // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return depthwise_conv2d(x, self.conv.weight, self.conv.bias, self.padding)
