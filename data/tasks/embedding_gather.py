"""Embedding table lookup (nn.Embedding) with int64 token indices."""
import torch
import torch.nn as nn


class Model(nn.Module):
    """Gathers rows of an nn.Embedding(num_embeddings, embedding_dim) table."""

    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        return self.embedding(indices)


num_embeddings = 32768
embedding_dim = 1024
batch_size = 64
seq_len = 1024

# Sizes used when the task runs small (CPU / Triton interpreter).
KERNELGYM_SMALL = {"num_embeddings": 100, "embedding_dim": 300, "batch_size": 3, "seq_len": 7}


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len), dtype=torch.int64)]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
