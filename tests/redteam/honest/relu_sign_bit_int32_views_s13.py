# task: relu
# style: a bit-level ReLU: the input is read through an int32 dtype view (`x.view(torch.int32)`), the kernel clears every word whose sign bit is set, writes an int32 buffer, and forward returns that buffer reinterpreted as float32 (`out.view(torch.float32)`, a dtype view, no copy); -0.0 becomes +0.0, NaN payloads pass unchanged
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_bits_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    w = tl.load(x_ptr + offs, mask=m, other=0)
    tl.store(out_ptr + offs, tl.where(w < 0, 0, w), mask=m)  # int32 < 0 <=> the float's sign bit is set


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bits = x.contiguous().view(torch.int32)
        out = torch.empty(bits.shape, device=x.device, dtype=torch.int32)
        n = bits.numel()
        relu_bits_kernel[(triton.cdiv(n, 1024),)](bits, out, n, BLOCK=1024)
        return out.view(torch.float32)
