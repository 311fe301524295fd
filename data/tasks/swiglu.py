"""SwiGLU gate: silu(x @ W1^T) * (x @ W2^T) with two bias-free linear layers."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Computes F.silu(w1(x)) * w2(x) with w1, w2 = nn.Linear(in_features, hidden_features, bias=False)."""

    def __init__(self, in_features: int, hidden_features: int):
        super().__init__()
        self.w1 = nn.Linear(in_features, hidden_features, bias=False)
        self.w2 = nn.Linear(in_features, hidden_features, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.w1(x)) * self.w2(x)


batch_size = 2048
in_features = 2048
hidden_features = 4096

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 33, "in_features": 77, "hidden_features": 50}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, hidden_features]
