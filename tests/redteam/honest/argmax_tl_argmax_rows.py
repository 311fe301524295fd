# task: argmax_dim
# style: tl.argmax with int64 output and a permute().contiguous() of the input
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def argmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    tl.store(out_ptr + row, tl.argmax(x, axis=0).to(tl.int64))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        B, D1, D2 = x.shape
        xt = x.permute(0, 2, 1).contiguous().view(B * D2, D1)  # the reduced axis last
        out = torch.empty(B * D2, device=x.device, dtype=torch.int64)
        argmax_kernel[(B * D2,)](xt, out, D1, BLOCK_SIZE=triton.next_power_of_2(D1))
        return out.view(B, D2)
