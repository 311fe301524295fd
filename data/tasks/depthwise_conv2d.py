"""Depthwise 2-D convolution (nn.Conv2d 3x3, groups = channels, padding 1, with bias)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies a depthwise nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels)."""

    def __init__(self, channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 8
channels = 64
kernel_size = 3
height = 512
width = 512

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "channels": 3, "height": 13, "width": 37}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, kernel_size]
