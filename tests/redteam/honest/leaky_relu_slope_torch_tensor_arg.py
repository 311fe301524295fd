# task: leaky_relu
# style: the slope travels to the kernel as a one-element device tensor built in forward with `torch.tensor([self.negative_slope], device=x.device)` (read with tl.load, so one compiled kernel serves every slope). `torch.tensor(data)` fills its storage from Python without an aten operator the recorder writes down (`lift_fresh` is skipped as a view), so the replay takes that storage for scratch and hands the kernel 0xFF bytes: NaN slope, wrong_output for honest code (`torch.full((1,), slope)` works)
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def leaky_relu_kernel(x_ptr, out_ptr, slope_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    slope = tl.load(slope_ptr)
    tl.store(out_ptr + offsets, tl.where(x >= 0, x, x * slope), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        slope = torch.tensor([self.negative_slope], dtype=x.dtype, device=x.device)
        n = x.numel()
        leaky_relu_kernel[(triton.cdiv(n, 1024),)](x, out, slope, n, BLOCK_SIZE=1024)
        return out
