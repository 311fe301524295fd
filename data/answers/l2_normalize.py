import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def l2_normalize_kernel(x_ptr, out_ptr, D, eps, BLOCK: tl.constexpr):
    # One program per row: pass 1 accumulates the squared norm, pass 2 scales the row.
    row = tl.program_id(0)
    x_row = x_ptr + row.to(tl.int64) * D
    o_row = out_ptr + row.to(tl.int64) * D
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, D, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < D, other=0.0).to(tl.float32)
        acc += x * x
    norm = tl.sqrt(tl.sum(acc, axis=0))
    denom = tl.maximum(norm, eps)
    for c0 in range(0, D, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        mask = cols < D
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(o_row + cols, x / denom, mask=mask)


def l2_normalize(x: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.contiguous()
    B, D = x.shape
    out = torch.empty_like(x)
    BLOCK = min(triton.next_power_of_2(D), 2048)
    num_warps = 8 if BLOCK >= 2048 else 4
    l2_normalize_kernel[(B,)](x, out, D, float(eps), BLOCK=BLOCK, num_warps=num_warps)
    return out


class ModelNew(nn.Module):
    def __init__(self, eps: float):
        super().__init__()
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return l2_normalize(x, self.eps)
