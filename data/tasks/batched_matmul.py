"""Batched fp32 matrix multiplication with torch.bmm."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Computes torch.bmm(A, B) for A (batch x M x K), B (batch x K x N)."""

    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        return torch.bmm(A, B)


batch_size = 128
M = 512
K = 1024
N = 512

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 3, "M": 77, "K": 50, "N": 40}


def get_inputs():
    return [torch.randn(batch_size, M, K), torch.randn(batch_size, K, N)]


def get_init_inputs():
    return []
