"""Max reduction (values only) over the middle dimension of a large 3-D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Takes the maximum over one dimension (values only, keepdim=False)."""

    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.max(x, dim=self.dim).values


batch_size = 128
dim1 = 1024
dim2 = 1024
reduce_dim = 1

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 4, "dim1": 77, "dim2": 300}


def get_inputs():
    return [torch.randn(batch_size, dim1, dim2)]


def get_init_inputs():
    return [reduce_dim]
