"""Linear layer (with bias) followed by ReLU."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(x @ W.T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


batch_size = 4096
in_features = 2048
out_features = 4096

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 20, "in_features": 77, "out_features": 150}


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
