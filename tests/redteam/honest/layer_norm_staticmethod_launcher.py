# task: layer_norm
# style: @staticmethod launcher on ModelNew, nn.LayerNorm built in __init__ with .weight/.bias read in forward, docstrings
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def layer_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, n_cols, stride, eps, BLOCK_SIZE: tl.constexpr):
    """One program per row: mean, variance, normalise, affine."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / n_cols
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * stride + cols, d / tl.sqrt(var + eps) * w + b, mask=mask)


class ModelNew(nn.Module):
    """LayerNorm over the last dimension in one Triton kernel."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.ln = nn.LayerNorm(dim, eps=eps)

    @staticmethod
    def launch(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        out = torch.empty_like(x2)
        layer_norm_kernel[(x2.shape[0],)](x2, weight, bias, out, x2.shape[1], x2.stride(0), eps,
                                          BLOCK_SIZE=triton.next_power_of_2(x2.shape[1]))
        return out.view(x.shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ModelNew.launch(x, self.ln.weight, self.ln.bias, self.ln.eps)
