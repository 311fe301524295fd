"""Causal scaled dot-product attention over (batch, heads, seq, head_dim) tensors."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """softmax(Q K^T / sqrt(D) + causal mask) V."""

    def __init__(self):
        super().__init__()

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


batch_size = 4
num_heads = 16
seq_len = 2048
head_dim = 64

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"batch_size": 2, "num_heads": 3, "seq_len": 77, "head_dim": 24}


def get_inputs():
    shape = (batch_size, num_heads, seq_len, head_dim)
    return [torch.randn(shape), torch.randn(shape), torch.randn(shape)]


def get_init_inputs():
    return []
