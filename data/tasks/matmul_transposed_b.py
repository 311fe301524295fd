"""fp32 matrix multiplication with a transposed right operand: C = A @ B.T."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes A (M x K) @ B.T where B is (N x K)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B.T)


M = 6144
K = 2048
N = 4096

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"M": 100, "K": 77, "N": 150}


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
