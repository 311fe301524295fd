"""Per-sample mean squared error: mean over features of (pred - target)^2 for each row."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Element-wise MSE (reduction='none') averaged over the feature dimension, one value per sample."""

    def __init__(self):
        super().__init__()

    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.mse_loss(predictions, targets, reduction="none").mean(dim=1)


batch_size = 4096
dim = 16384

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 8, "dim": 2500}


def get_inputs():
    predictions = torch.randn(batch_size, dim)
    targets = torch.randn(batch_size, dim)
    return [predictions, targets]


def get_init_inputs():
    return []
