"""Rectangular fp32 matrix multiplication C = A @ B with M, K, N all different."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes A (M x K) @ B (K x N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.matmul(A, B)


M = 8192
K = 2048
N = 4096

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"M": 77, "K": 150, "N": 100}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
