# task: add_layer_norm
# style: module-level helper launcher function, nn.LayerNorm parameters read in forward, tl.range loop
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_ln_kernel(x_ptr, r_ptr, w_ptr, b_ptr, out_ptr, n_cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    base = row * n_cols
    s = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in tl.range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < n_cols
        s += tl.load(x_ptr + base + cols, mask=m, other=0.0) + tl.load(r_ptr + base + cols, mask=m, other=0.0)
    mean = tl.sum(s, axis=0) / n_cols
    v = tl.zeros((BLOCK,), dtype=tl.float32)
    for c0 in tl.range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < n_cols
        h = tl.load(x_ptr + base + cols, mask=m, other=0.0) + tl.load(r_ptr + base + cols, mask=m, other=0.0)
        d = tl.where(m, h - mean, 0.0)
        v += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(v, axis=0) / n_cols + eps)
    for c0 in tl.range(0, n_cols, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        m = cols < n_cols
        h = tl.load(x_ptr + base + cols, mask=m, other=0.0) + tl.load(r_ptr + base + cols, mask=m, other=0.0)
        y = (h - mean) * rstd * tl.load(w_ptr + cols, mask=m) + tl.load(b_ptr + cols, mask=m)
        tl.store(out_ptr + base + cols, y, mask=m)


def add_layer_norm(x, residual, weight, bias, eps):
    x, residual = x.contiguous(), residual.contiguous()
    out = torch.empty_like(x)
    add_ln_kernel[(x.shape[0],)](x, residual, weight, bias, out, x.shape[1], eps, BLOCK=512)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, residual):
        return add_layer_norm(x, residual, self.norm.weight, self.norm.bias, self.norm.eps)
