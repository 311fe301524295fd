# task: softmax
# style: rows padded to a power of two in a scratch buffer, the kernel writes whole padded rows (no store mask), forward returns the valid columns as a slice view (strides (BLOCK, 1)): correct values, refused by the output-layout rule
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_padded_kernel(x_ptr, out_ptr, n_cols, stride_x, stride_out, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * stride_x + cols, mask=cols < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(out_ptr + row * stride_out + cols, e / tl.sum(e, axis=0))  # the whole padded row


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        rows, cols = x.shape
        block = triton.next_power_of_2(cols)
        padded = torch.empty(rows, block, device=x.device, dtype=x.dtype)
        softmax_padded_kernel[(rows,)](x, padded, cols, x.stride(0), padded.stride(0), BLOCK=block)
        return padded[:, :cols]
