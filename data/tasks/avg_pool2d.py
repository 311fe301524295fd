"""3x3 average pooling, stride 1, padding 1 (nn.AvgPool2d, count_include_pad=True) on an NCHW batch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies nn.AvgPool2d(kernel_size, stride, padding) with the default count_include_pad=True."""

    def __init__(self, kernel_size: int, stride: int, padding: int):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size=kernel_size, stride=stride, padding=padding)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 8
channels = 64
height = 512
width = 512
kernel_size = 3
stride = 1
padding = 1

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "channels": 3, "height": 13, "width": 37}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding]
