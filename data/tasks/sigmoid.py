"""Sigmoid over a large 2-D activation tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies sigmoid element-wise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


batch_size = 4096
dim = 16384

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 8, "dim": 300}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
