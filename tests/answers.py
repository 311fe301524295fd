"""Small answers built in code for the status tests (relu task unless said otherwise)."""

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
"""

RELU_KERNEL = """
@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)
"""


def relu_answer(forward_body: str = "", extra: str = "", init: str = "") -> str:
    """A relu answer whose forward runs `forward_body` before the normal kernel launch."""
    body = "\n".join("        " + line for line in forward_body.strip().splitlines()) if forward_body else ""
    init_body = "\n".join("        " + line for line in init.strip().splitlines()) if init else ""
    return f"""{HEADER}
{extra}
{RELU_KERNEL}
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
{init_body}

    def forward(self, x):
{body}
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
"""
