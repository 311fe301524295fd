import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def embedding_kernel(idx_ptr, w_ptr, out_ptr, D, BLOCK_D: tl.constexpr):
    # grid = (number of indices, blocks over embedding dim): copy one table row slice.
    pid = tl.program_id(0).to(tl.int64)
    pid_d = tl.program_id(1)
    idx = tl.load(idx_ptr + pid).to(tl.int64)
    offs = pid_d * BLOCK_D + tl.arange(0, BLOCK_D)
    mask = offs < D
    v = tl.load(w_ptr + idx * D + offs, mask=mask, other=0.0)
    tl.store(out_ptr + pid * D + offs, v, mask=mask)


def embedding(indices: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    idx = indices.contiguous().view(-1)
    weight = weight.contiguous()
    n = idx.numel()
    D = weight.shape[1]
    out = torch.empty((n, D), device=weight.device, dtype=weight.dtype)
    BLOCK_D = min(1024, triton.next_power_of_2(D))
    grid = (n, triton.cdiv(D, BLOCK_D))
    embedding_kernel[grid](idx, weight, out, D, BLOCK_D=BLOCK_D, num_warps=4)
    return out.view(*indices.shape, D)


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices: torch.Tensor) -> torch.Tensor:
        return embedding(indices, self.embedding.weight)
