# task: tanh_activation
# style: an if __name__ == '__main__': self-test comparing with torch.tanh
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ew_kernel(x_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        pass

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        ew_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK_SIZE=1024)
        return out


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(64, 300)
    torch.testing.assert_close(ModelNew()(x), torch.tanh(x), rtol=1e-5, atol=1e-5)
    print("ok")
