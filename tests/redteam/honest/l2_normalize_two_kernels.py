# task: l2_normalize
# style: several kernels: a row-norm kernel, then a scaling kernel, with helper launcher functions
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_norm_kernel(x_ptr, norm_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_SIZE):
        cols = c0 + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
        acc += x * x
    tl.store(norm_ptr + row, tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps))


@triton.jit
def scale_rows_kernel(x_ptr, norm_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x / tl.load(norm_ptr + row), mask=mask)


def row_norms(x, eps):
    norms = torch.empty(x.shape[0], device=x.device, dtype=torch.float32)
    row_norm_kernel[(x.shape[0],)](x, norms, x.shape[1], eps, BLOCK_SIZE=1024)
    return norms


def scale_rows(x, norms):
    out = torch.empty_like(x)
    scale_rows_kernel[(x.shape[0], triton.cdiv(x.shape[1], 1024))](x, norms, out, x.shape[1], BLOCK_SIZE=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x):
        x = x.contiguous()
        return scale_rows(x, row_norms(x, self.eps))
