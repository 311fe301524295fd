# task: embedding_gather
# source: FlagOpen/FlagGems src/flag_gems/ops/embedding.py (flag-gems 5.0.2, PyPI wheel)
# licence: Apache-2.0, Copyright (c) 2024 BAAI (FlagOpen/FlagGems)
# style: one program per index, pointer arithmetic with `ptr +=` on kernel arguments, N as tl.constexpr, `kernel[M,]` launch with a 1-tuple grid, assert on the sparse flag; the backward kernels and embedding_backward dropped (forward only), @libentry() and logger.debug dropped, tle.program_id inlined verbatim
import torch
import torch.nn as nn
import triton
import triton.language as tl
torch_device_fn = torch.cuda  # KernelGym: flag_gems.runtime.torch_device_fn is torch.cuda on NVIDIA


# ---- inlined from src/flag_gems/utils/triton_lang_extension.py (same version) ----
@triton.jit
def tle_program_id(  # `tle.program_id` in the source
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)
# ---- end ----


@triton.jit
def embedding_kernel(
    out_ptr,  # pointer to the output
    in_ptr,  # pointer to the input
    weight_ptr,  # pointer to the weights
    N: tl.constexpr,  # number of columns in X
    BLOCK_SIZE: tl.constexpr,
):
    pid = tle_program_id(0)
    out_ptr += pid * N
    in_ptr += pid

    mask = tl.arange(0, BLOCK_SIZE) < N
    cols = tl.arange(0, BLOCK_SIZE)

    row_idx = tl.load(in_ptr)
    weight_ptr += row_idx * N
    embedding_weight = tl.load(weight_ptr + cols, mask, other=0.0)
    tl.store(out_ptr + cols, embedding_weight, mask)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    assert not sparse, "Currently do not support sparse format"

    M = indices.numel()
    N = weight.shape[-1]

    BLOCK_SIZE = triton.next_power_of_2(N)
    # TODO: remove contiguous enforcement
    indices = indices.contiguous()
    weight = weight.contiguous()
    output = torch.empty((*indices.shape, N), device=indices.device, dtype=weight.dtype)

    with torch_device_fn.device(weight.device):
        embedding_kernel[M,](output, indices, weight, N, BLOCK_SIZE)

    return output


class ModelNew(nn.Module):
    def __init__(self, num_embeddings: int, embedding_dim: int):
        super().__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices):
        return embedding(self.embedding.weight, indices)
