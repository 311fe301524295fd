# task: relu
# style: class-level constant config dict read through self in forward
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    CONFIG = {"BLOCK_SIZE": 1024, "num_warps": 4}

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        cfg = self.CONFIG
        relu_kernel[(triton.cdiv(n, cfg["BLOCK_SIZE"]),)](x, out, n, BLOCK_SIZE=cfg["BLOCK_SIZE"],
                                                          num_warps=cfg["num_warps"])
        return out
