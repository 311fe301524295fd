import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_layer_norm_kernel(x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, N, eps, BLOCK_SIZE: tl.constexpr):
    # One program per row: h = x + r; out = (h - mean) / sqrt(var + eps) * w + b.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * N
    r_row = r_ptr + row * N
    out_row = out_ptr + row * N
    # pass 1: mean
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < N
        h = tl.load(x_row + offs, mask=mask, other=0.0) + tl.load(r_row + offs, mask=mask, other=0.0)
        acc += h
    mean = tl.sum(acc, axis=0) / N
    # pass 2: variance around the mean (numerically stable two-pass)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < N
        h = tl.load(x_row + offs, mask=mask, other=0.0) + tl.load(r_row + offs, mask=mask, other=0.0)
        d = tl.where(mask, h - mean, 0.0)
        acc += d * d
    var = tl.sum(acc, axis=0) / N
    rstd = 1.0 / tl.sqrt(var + eps)
    # pass 3: normalize + affine
    for start in range(0, N, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < N
        h = tl.load(x_row + offs, mask=mask, other=0.0) + tl.load(r_row + offs, mask=mask, other=0.0)
        w = tl.load(w_ptr + offs, mask=mask, other=0.0)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0)
        tl.store(out_row + offs, (h - mean) * rstd * w + b, mask=mask)


def add_layer_norm(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                   eps: float) -> torch.Tensor:
    x = x.contiguous()
    residual = residual.contiguous()
    weight = weight.contiguous()
    bias = bias.contiguous()
    N = x.shape[-1]
    rows = x.numel() // N
    out = torch.empty_like(x)
    BLOCK_SIZE = min(1024, triton.next_power_of_2(N))
    add_layer_norm_kernel[(rows,)](x, residual, weight, bias, out, N, eps, BLOCK_SIZE=BLOCK_SIZE, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        return add_layer_norm(x, residual, self.norm.weight, self.norm.bias, self.norm.eps)
