# task: argmax_dim
# style: the kernel keeps int32 indices (half the bytes of int64) in a (B, 1, N) keepdim buffer; forward drops the dim in place (`idx.squeeze_(1)`) and widens with `.long()` (a dtype copy of what the kernel wrote); a running max over tiles with first-index tie-breaking
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_dim1_kernel(x_ptr, idx_ptr, D, N, stride_b, stride_d, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    best = tl.full([BLOCK_N], float("-inf"), tl.float32)
    best_i = tl.zeros([BLOCK_N], dtype=tl.int32)
    for start in range(0, D, BLOCK_D):
        rows = start + tl.arange(0, BLOCK_D)
        tile = tl.load(x_ptr + b * stride_b + rows[:, None] * stride_d + cols[None, :],
                       mask=(rows[:, None] < D) & col_ok[None, :], other=float("-inf"))
        tile_max = tl.max(tile, axis=0)
        is_max = tile == tile_max[None, :]
        cand = tl.where(is_max, rows[:, None], D)
        tile_i = tl.min(cand, axis=0).to(tl.int32)
        better = tile_max > best
        best_i = tl.where(better, tile_i, best_i)
        best = tl.where(better, tile_max, best)
    tl.store(idx_ptr + b * N + cols, best_i, mask=col_ok)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert self.dim == 1 and x.dim() == 3
        x = x.contiguous()
        B, D, N = x.shape
        idx = torch.empty((B, 1, N), device=x.device, dtype=torch.int32)
        argmax_dim1_kernel[(B, triton.cdiv(N, 64))](x, idx, D, N, x.stride(0), x.stride(1), BLOCK_D=32, BLOCK_N=64)
        idx.squeeze_(1)
        return idx.long()
