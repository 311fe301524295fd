import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_row_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                        BLOCK_SIZE: tl.constexpr):
    # One program per row; the whole row fits in one block.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + cols, x * rstd * w, mask=mask)


@triton.jit
def rms_norm_loop_kernel(x_ptr, w_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                         BLOCK_SIZE: tl.constexpr):
    # One program per row; long rows: sum-of-squares pass, then normalise pass.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offs
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, x * rstd * w, mask=mask)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2 = x.contiguous().view(-1, n_cols)
    n_rows = x2.shape[0]
    w = weight.contiguous()
    out = torch.empty_like(x2)
    if n_cols <= 16384:
        block = triton.next_power_of_2(n_cols)
        num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        rms_norm_row_kernel[(n_rows,)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps,
                                       BLOCK_SIZE=block, num_warps=num_warps)
    else:
        rms_norm_loop_kernel[(n_rows,)](x2, w, out, n_cols, x2.stride(0), out.stride(0), eps,
                                        BLOCK_SIZE=4096, num_warps=8)
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.randn(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)
