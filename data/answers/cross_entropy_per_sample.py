import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, out_ptr, C, ignore_index, BLOCK: tl.constexpr):
    # One program per row: single-pass online log-sum-exp over the classes
    # (running max m and running sum s of exp(x - m)), then loss = m + log(s) - x[target].
    row = tl.program_id(0)
    x_row = logits_ptr + row.to(tl.int64) * C
    m = -float("inf")
    s = 0.0
    for c0 in range(0, C, BLOCK):
        cols = c0 + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < C, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    t = tl.load(targets_ptr + row)
    valid = t != ignore_index
    x_t = tl.load(x_row + t, mask=valid, other=0.0).to(tl.float32)
    loss = m + tl.log(s) - x_t
    loss = tl.where(valid, loss, 0.0)
    tl.store(out_ptr + row, loss)


def cross_entropy_per_sample(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = logits.contiguous()
    targets = targets.contiguous()
    B, C = logits.shape
    out = torch.empty((B,), dtype=logits.dtype, device=logits.device)
    BLOCK = min(triton.next_power_of_2(C), 2048)
    num_warps = 8 if BLOCK >= 2048 else 4
    cross_entropy_kernel[(B,)](logits, targets, out, C, -100, BLOCK=BLOCK, num_warps=num_warps)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return cross_entropy_per_sample(logits, targets)
