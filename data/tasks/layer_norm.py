"""LayerNorm (with learnable affine parameters) over the last dimension of a 2-D tensor."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies nn.LayerNorm over the last dimension."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


batch_size = 4096
dim = 16384
eps = 1e-5

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 8, "dim": 300}


def get_inputs():
    # Activations with non-zero mean and non-unit scale, so normalisation is far from the identity.
    return [torch.randn(batch_size, dim) * 3.0 + 1.5]


def get_init_inputs():
    return [dim, eps]
