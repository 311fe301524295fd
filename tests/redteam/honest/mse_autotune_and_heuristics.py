# task: mse_loss_per_sample
# style: @triton.autotune stacked over @triton.heuristics on one kernel
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n_cols"])
@triton.heuristics({"ONE_PASS": lambda args: args["n_cols"] <= args["BLOCK"]})
@triton.jit
def mse_rows_kernel(p_ptr, t_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, ONE_PASS: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    if ONE_PASS:
        cols = tl.arange(0, BLOCK)
        m = cols < n_cols
        d = tl.load(p_ptr + row * n_cols + cols, mask=m, other=0.0) - tl.load(t_ptr + row * n_cols + cols, mask=m, other=0.0)
        acc += d * d
    else:
        for c0 in range(0, n_cols, BLOCK):
            cols = c0 + tl.arange(0, BLOCK)
            m = cols < n_cols
            d = tl.load(p_ptr + row * n_cols + cols, mask=m, other=0.0) - tl.load(t_ptr + row * n_cols + cols, mask=m, other=0.0)
            acc += d * d
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p, t = predictions.contiguous(), targets.contiguous()
        out = torch.empty(p.shape[0], device=p.device, dtype=p.dtype)
        mse_rows_kernel[(p.shape[0],)](p, t, out, p.shape[1])
        return out
