# task: softmax
# style: forward runs under `torch.inference_mode()` (the serving idiom, in place of no_grad) and hands the kernel the input's `x.shape` (a torch.Size, a tuple) and `x.stride()` as tuple arguments (Triton 3 tuple parameters, indexed in the kernel); one program per row, the whole row in one block
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_rows_kernel(x_ptr, out_ptr, shape, strides, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    n_cols = shape[1]
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * strides[0] + cols * strides[1], mask=m, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    e = tl.where(m, tl.exp(x), 0.0)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.inference_mode():
            x2 = x.reshape(-1, x.shape[-1])
            out = torch.empty(x2.shape, device=x.device, dtype=x.dtype)
            softmax_rows_kernel[(x2.shape[0],)](x2, out, x2.shape, x2.stride(),
                                               BLOCK=triton.next_power_of_2(x2.shape[1]))
            return out.view(x.shape)
