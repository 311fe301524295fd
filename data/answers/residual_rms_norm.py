import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def residual_rms_norm_kernel(x_ptr, r_ptr, w_ptr, out_ptr, N, eps, BLOCK_SIZE: tl.constexpr):
    # One program per row: h = x + r; out = h * rsqrt(mean(h^2) + eps) * w.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    r_row = r_ptr + row * N
    out_row = out_ptr + row * N
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < N
        h = tl.load(x_row + offs, mask=mask, other=0.0) + tl.load(r_row + offs, mask=mask, other=0.0)
        acc += h * h
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < N
        h = tl.load(x_row + offs, mask=mask, other=0.0) + tl.load(r_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        tl.store(out_row + offs, h * rstd * w, mask=mask)


def residual_rms_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.contiguous()
    residual = residual.contiguous()
    weight = weight.contiguous()
    N = x.shape[-1]
    rows = x.numel() // N
    out = torch.empty_like(x)
    BLOCK_SIZE = min(1024, triton.next_power_of_2(N))
    residual_rms_norm_kernel[(rows,)](x, residual, weight, out, N, eps, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return residual_rms_norm(x, residual, self.weight, self.eps)
