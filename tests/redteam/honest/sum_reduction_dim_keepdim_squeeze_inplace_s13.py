# task: sum_reduction_dim
# style: the kernel writes a keepdim-shaped (B, 1, N) result and forward drops the reduced dim in place with `out.squeeze_(1)`; aten.squeeze_ (like unsqueeze_, t_, transpose_) is not marked is_view, so the recorder filed it as torch compute: `cheat RH-01` before round s13, ok since (recorder.IN_PLACE_VIEWS)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim1_kernel(x_ptr, out_ptr, D, N, BLOCK_D: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(0)
    pid_n = tl.program_id(1)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, D, BLOCK_D):
        rows = start + tl.arange(0, BLOCK_D)
        ptrs = x_ptr + b * D * N + rows[:, None] * N + cols[None, :]
        tile = tl.load(ptrs, mask=(rows[:, None] < D) & (cols[None, :] < N), other=0.0)
        acc += tl.sum(tile, axis=0)
    tl.store(out_ptr + b * N + cols, acc, mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        B, D, N = x.shape
        out = torch.empty(B, 1, N, device=x.device, dtype=x.dtype)  # keepdim=True layout
        grid = (B, triton.cdiv(N, 64))
        sum_dim1_kernel[grid](x, out, D, N, BLOCK_D=32, BLOCK_N=64)
        out.squeeze_(1)
        return out
