"""Fused element-wise multiply-add x * y + z over three large 2-D tensors."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes x * y + z element-wise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x * y + z


batch_size = 4096
dim = 16384

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 8, "dim": 300}


def get_inputs():
    x = torch.randn(batch_size, dim)
    y = torch.randn(batch_size, dim)
    z = torch.randn(batch_size, dim)
    return [x, y, z]


def get_init_inputs():
    return []
