# task: relu
# style: pointer-to-pointer reinterpretation (`x_ptr.to(tl.pointer_type(tl.int32))`): relu on the bits, sign bit set means negative; int<->pointer casts are refused, pointer<->pointer casts are not
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_bits_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x_bits = x_ptr.to(tl.pointer_type(tl.int32))
    out_bits = out_ptr.to(tl.pointer_type(tl.int32))
    bits = tl.load(x_bits + offs, mask=mask, other=0)
    tl.store(out_bits + offs, tl.where(bits < 0, 0, bits), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_bits_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
