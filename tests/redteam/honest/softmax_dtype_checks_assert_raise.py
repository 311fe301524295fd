# task: softmax
# style: dtype checks (if x.dtype == torch.float16), assert x.is_contiguous(), raise ValueError on bad rank
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    y = e / tl.sum(e, axis=0)
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise ValueError(f"expected a 2-D input, got {x.dim()}-D")
        if x.dtype == torch.float16 or x.dtype == torch.bfloat16:
            num_warps = 4
        else:
            num_warps = 8
        x = x.contiguous()
        assert x.is_contiguous()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK_SIZE=triton.next_power_of_2(x.shape[1]),
                                      num_warps=num_warps)
        return out
