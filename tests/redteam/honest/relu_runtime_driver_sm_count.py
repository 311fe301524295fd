# task: relu
# style: 'from triton.runtime import driver' (the tutorials' import) used only on the CUDA path to size a persistent grid; tl.range loop
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.runtime import driver


@triton.jit
def relu_persistent_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_blocks = tl.cdiv(n_elements, BLOCK_SIZE)
    for b in tl.range(pid, num_blocks, nprog):
        offsets = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        mask = offsets < n_elements
        x = tl.load(x_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


def num_programs(x: torch.Tensor, n: int) -> int:
    blocks = triton.cdiv(n, 1024)
    if x.is_cuda:
        props = driver.active.utils.get_device_properties(x.device.index or 0)
        return min(blocks, props["multiprocessor_count"] * 4)
    return blocks


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_persistent_kernel[(num_programs(x, n),)](x, out, n, BLOCK_SIZE=1024)
        return out
