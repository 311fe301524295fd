"""fp32 matrix-vector product: A (M x K) @ B (K x 1)."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes A @ B where B is a single column."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 65536
K = 2048

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"M": 77, "K": 300}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, 1)]


def get_init_inputs():
    return []
