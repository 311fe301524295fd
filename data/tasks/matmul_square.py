"""Square fp32 matrix multiplication C = A @ B."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes A @ B for square matrices."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


N = 4096

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"N": 150}


def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]


def get_init_inputs():
    return []
