# task: l2_normalize
# style: two ops organised as classes, each holding its own `@staticmethod @triton.jit def kernel` (the same function name in two class scopes, as op-per-class libraries write them): a row-norm kernel and a scaling kernel
import torch
import torch.nn as nn
import triton
import triton.language as tl


class RowNorm:
    @staticmethod
    @triton.jit
    def kernel(x_ptr, norm_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for c0 in range(0, n_cols, BLOCK):
            cols = c0 + tl.arange(0, BLOCK)
            v = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=0.0)
            acc += v * v
        tl.store(norm_ptr + row, tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps))

    @staticmethod
    def apply(x, eps):
        norms = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
        RowNorm.kernel[(x.shape[0],)](x, norms, x.shape[1], eps, BLOCK=1024)
        return norms


class RowScale:
    @staticmethod
    @triton.jit
    def kernel(x_ptr, norm_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        blk = tl.program_id(1)
        cols = blk * BLOCK + tl.arange(0, BLOCK)
        mask = cols < n_cols
        v = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
        nrm = tl.load(norm_ptr + row)
        tl.store(out_ptr + row * n_cols + cols, v / nrm, mask=mask)

    @staticmethod
    def apply(x, norms):
        out = torch.empty_like(x)
        RowScale.kernel[(x.shape[0], triton.cdiv(x.shape[1], 1024))](x, norms, out, x.shape[1], BLOCK=1024)
        return out


class ModelNew(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        return RowScale.apply(x, RowNorm.apply(x, self.eps))
