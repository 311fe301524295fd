"""LeakyReLU with a configurable negative slope over a large 2-D activation tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Applies LeakyReLU element-wise."""

    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.leaky_relu(x, negative_slope=self.negative_slope)


batch_size = 4096
dim = 16384
negative_slope = 0.01

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 8, "dim": 300}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [negative_slope]
