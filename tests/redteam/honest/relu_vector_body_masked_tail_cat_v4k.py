# task: relu
# style: a vectorised body kernel over the largest multiple of VEC elements (no masks) and a masked tail kernel for the rest, each into its own output, assembled with `torch.cat` (data movement the contract allows: "an output assembled this way from what your kernels wrote is your kernels'"); when the element count is a multiple of VEC the tail is empty and its launch is skipped (a grid of 0 programs is not launched), so one source of the cat is an empty `torch.empty(0)` no kernel was handed (red-team v4k: judged invalid_answer at 0dbe806, "an output was last written by torch (aten.cat.default)": `Trace.torch_made_outputs` counts the empty source as torch's; with VEC = 64, a non-empty tail, it is ok)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_body_kernel(x_ptr, y_ptr, VEC: tl.constexpr):
    offs = tl.program_id(0) * VEC + tl.arange(0, VEC)
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs), 0.0))


@triton.jit
def relu_tail_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=mask, other=0.0), 0.0), mask=mask)


class ModelNew(nn.Module):
    VEC = 16

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.contiguous().view(-1)
        n = flat.numel()
        body_n = n // self.VEC * self.VEC
        tail_n = n - body_n
        body = torch.empty(body_n, device=x.device, dtype=x.dtype)
        tail = torch.empty(tail_n, device=x.device, dtype=x.dtype)
        if body_n:
            relu_body_kernel[(body_n // self.VEC,)](flat, body, VEC=self.VEC)
        if tail_n:
            relu_tail_kernel[(1,)](flat[body_n:], tail, tail_n, BLOCK=triton.next_power_of_2(tail_n))
        return torch.cat([body, tail]).view(x.shape)
