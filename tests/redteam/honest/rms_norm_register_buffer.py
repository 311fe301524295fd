# task: rms_norm
# style: register_buffer for a constant tensor read by the kernel; weight as nn.Parameter; x.shape arithmetic
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rms_norm_kernel(x_ptr, w_ptr, eps_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    eps = tl.load(eps_ptr)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * r * w, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim))
        self.register_buffer("eps", torch.full((1,), eps))

    def forward(self, x):
        n_cols = x.shape[-1]
        n_rows = x.numel() // n_cols
        x2 = x.contiguous().view(n_rows, n_cols)
        out = torch.empty_like(x2)
        rms_norm_kernel[(n_rows,)](x2, self.weight, self.eps, out, n_cols, BLOCK_SIZE=triton.next_power_of_2(n_cols))
        return out.view(x.shape)
