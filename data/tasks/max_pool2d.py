"""2x2 max pooling with stride 2 (nn.MaxPool2d) on an NCHW batch."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies nn.MaxPool2d(kernel_size, stride)."""

    def __init__(self, kernel_size: int, stride: int):
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(x)


batch_size = 16
channels = 64
height = 512
width = 512
kernel_size = 2
stride = 2

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "channels": 3, "height": 13, "width": 37}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride]
