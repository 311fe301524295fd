"""HardTanh (clamp to [min_val, max_val]) over a large 2-D activation tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Applies HardTanh element-wise."""

    def __init__(self, min_val: float, max_val: float):
        super().__init__()
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.hardtanh(x, min_val=self.min_val, max_val=self.max_val)


batch_size = 4096
dim = 16384
min_val = -1.0
max_val = 1.0

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 8, "dim": 300}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [min_val, max_val]
