"""1-D convolution (nn.Conv1d with bias, stride 1, no padding) over long sequences."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies nn.Conv1d(in_channels, out_channels, kernel_size) with bias, stride 1."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


batch_size = 32
in_channels = 64
out_channels = 128
kernel_size = 3
length = 32768

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "in_channels": 5, "out_channels": 7, "length": 77}


def get_inputs():
    return [torch.randn(batch_size, in_channels, length)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
