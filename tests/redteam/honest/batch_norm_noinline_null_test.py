# task: batch_norm_inference
# style: the data answer with its weight and bias read by a @triton.jit(noinline=True) helper that tests the pointer's truthiness (`if ptr:`, FlagGems' optional-argument idiom). Red-team round v4f: ok on the CPU; on an H200 (2026-11-27) the replay's IR check refused it, since the null-test exemption covered only the public kernel's own pointer arguments. Now a helper's argument counts when every tt.call of the helper passes a kernel's own pointer argument there (`launch_hook._kernel_pointer`, tests/judge/test_forged_pointers_v4f.py); not yet GPU-run
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit(noinline=True)
def optional_affine(ptr, c, default):
    # FlagGems' optional-argument idiom in a noinline helper: the pointer's truthiness (a null test on a GPU)
    v = default
    if ptr:
        v = tl.load(ptr + c).to(tl.float32)
    return v


@triton.jit
def batch_norm_inference_kernel(x_ptr, mean_ptr, var_ptr, w_ptr, b_ptr, out_ptr, C, HW, blocks_per_plane, eps,
                                BLOCK_SIZE: tl.constexpr):
    # Each program handles one BLOCK_SIZE chunk of one (n, c) plane, so the channel is a scalar.
    pid = tl.program_id(0)
    plane = pid // blocks_per_plane
    blk = pid % blocks_per_plane
    c = plane % C
    mean = tl.load(mean_ptr + c).to(tl.float32)
    denom = tl.sqrt(tl.load(var_ptr + c).to(tl.float32) + eps)
    w = optional_affine(w_ptr, c, 1.0)
    b = optional_affine(b_ptr, c, 0.0)
    offs = blk * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < HW
    base = plane.to(tl.int64) * HW
    x = tl.load(x_ptr + base + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + base + offs, (x - mean) / denom * w + b, mask=mask)


def batch_norm_inference(x, mean, var, weight, bias, eps):
    x = x.contiguous()
    n = x.shape[0]
    c = x.shape[1]
    hw = x.numel() // (n * c)
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(hw), 2048)
    blocks_per_plane = triton.cdiv(hw, block)
    grid = (n * c * blocks_per_plane,)
    batch_norm_inference_kernel[grid](x, mean.contiguous(), var.contiguous(), weight.contiguous(), bias.contiguous(),
                                      out, c, hw, blocks_per_plane, eps, BLOCK_SIZE=block, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, num_channels: int, eps: float):
        super().__init__()
        self.eps = eps
        self.running_mean = nn.Parameter(torch.randn(num_channels))
        self.running_var = nn.Parameter(torch.rand(num_channels))
        self.weight = nn.Parameter(torch.randn(num_channels))
        self.bias = nn.Parameter(torch.randn(num_channels))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return batch_norm_inference(x, self.running_mean, self.running_var, self.weight, self.bias, self.eps)
