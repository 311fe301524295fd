import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_row_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                          BLOCK_SIZE: tl.constexpr):
    # One program per row; the whole row fits in one block.
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / n_cols
    xc = tl.where(mask, x - mean, 0.0)
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * out_row_stride + cols, xc * rstd * w + b, mask=mask)


@triton.jit
def layer_norm_loop_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, x_row_stride, out_row_stride, eps,
                           BLOCK_SIZE: tl.constexpr):
    # One program per row; long rows: mean pass, centred-variance pass, normalise pass.
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    offs = tl.arange(0, BLOCK_SIZE)
    acc = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offs
        acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        xc = tl.where(mask, x - mean, 0.0)
        acc2 += xc * xc
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + offs
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_row + cols, (x - mean) * rstd * w + b, mask=mask)


def layer_norm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    n_cols = x.shape[-1]
    x2 = x.contiguous().view(-1, n_cols)
    n_rows = x2.shape[0]
    w = weight.contiguous()
    b = bias.contiguous()
    out = torch.empty_like(x2)
    if n_cols <= 16384:
        block = triton.next_power_of_2(n_cols)
        num_warps = 4 if block <= 2048 else (8 if block <= 8192 else 16)
        layer_norm_row_kernel[(n_rows,)](x2, w, b, out, n_cols, x2.stride(0), out.stride(0), eps,
                                         BLOCK_SIZE=block, num_warps=num_warps)
    else:
        layer_norm_loop_kernel[(n_rows,)](x2, w, b, out, n_cols, x2.stride(0), out.stride(0), eps,
                                          BLOCK_SIZE=4096, num_warps=8)
    return out.view(x.shape)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return layer_norm(x, self.ln.weight, self.ln.bias, self.ln.eps)
