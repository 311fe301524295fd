# task: relu
# style: torchvision-style private helpers on the answer's own module whose names torch's layers also use (`_forward_impl`, `_reset_parameters`, `self._dtype`, `self._name`): refused by the first fix of the eleventh session's scan review (own private names that torch objects also have), free on self in the answer's own methods after the second
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._dtype = None
        self._name = "relu"
        self._reset_parameters()

    def _reset_parameters(self):
        self._block = 1024

    def _forward_impl(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), self._block),)](x, out, x.numel(), BLOCK_SIZE=self._block)
        return out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._forward_impl(x.contiguous())
