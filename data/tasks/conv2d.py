"""2-D convolution (nn.Conv2d 3x3 with bias, padding 1) on an NCHW batch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2) with bias."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, padding=kernel_size // 2, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 128
kernel_size = 3
height = 128
width = 128

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "in_channels": 5, "out_channels": 7, "height": 9, "width": 11}


def get_inputs():
    return [torch.randn(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
