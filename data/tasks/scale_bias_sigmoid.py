"""Per-channel affine (x * scale + bias) followed by sigmoid on an NCHW tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes sigmoid(x * scale[c] + bias[c]) with learned per-channel scale and bias."""

    def __init__(self, channels: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(channels))
        self.bias = nn.Parameter(torch.randn(channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x * self.scale.view(1, -1, 1, 1) + self.bias.view(1, -1, 1, 1))


batch_size = 16
channels = 64
height = 256
width = 256

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "channels": 3, "height": 13, "width": 37}


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels]
