# task: relu
# style: @triton.heuristics reading tensor metadata (dtype, element_size, stride) of the launch arguments
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({
    "BLOCK": lambda a: 4096 // a["x_ptr"].element_size(),
    "EVEN": lambda a: a["n_elements"] % (4096 // a["x_ptr"].element_size()) == 0,
    "IS_FP16": lambda a: a["x_ptr"].dtype == torch.float16,
})
@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr, EVEN: tl.constexpr, IS_FP16: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, tl.maximum(x, 0.0))
    else:
        m = offs < n_elements
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out
