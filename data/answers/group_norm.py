import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def group_norm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, HW, group_size, channels_per_group, num_groups, eps,
                      BLOCK_SIZE: tl.constexpr):
    # One program per (sample, group). In contiguous NCHW a group is one contiguous run of
    # channels_per_group * HW elements starting at pid * group_size.
    pid = tl.program_id(0)
    g = pid % num_groups
    base = pid.to(tl.int64) * group_size
    x_grp = x_ptr + base
    out_grp = out_ptr + base
    offs = tl.arange(0, BLOCK_SIZE)
    # Shifted sums (shift = first element of the group) keep the one-pass variance well conditioned.
    shift = tl.load(x_grp).to(tl.float32)
    s1 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, group_size, BLOCK_SIZE):
        idx = start + offs
        mask = idx < group_size
        x = tl.load(x_grp + idx, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - shift, 0.0)
        s1 += d
        s2 += d * d
    mean_d = tl.sum(s1, axis=0) / group_size
    var = tl.maximum(tl.sum(s2, axis=0) / group_size - mean_d * mean_d, 0.0)
    mean = shift + mean_d
    rstd = 1.0 / tl.sqrt(var + eps)
    c0 = g * channels_per_group
    for start in range(0, group_size, BLOCK_SIZE):
        idx = start + offs
        mask = idx < group_size
        x = tl.load(x_grp + idx, mask=mask, other=0.0).to(tl.float32)
        c = c0 + idx // HW
        w = tl.load(w_ptr + c, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_grp + idx, (x - mean) * rstd * w + b, mask=mask)


def group_norm(x: torch.Tensor, num_groups: int, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    x = x.contiguous()
    n = x.shape[0]
    c = x.shape[1]
    hw = x.numel() // (n * c)
    cpg = c // num_groups
    group_size = cpg * hw
    out = torch.empty_like(x)
    block = min(triton.next_power_of_2(group_size), 4096)
    num_warps = 4 if block <= 1024 else 8
    group_norm_kernel[(n * num_groups,)](x, weight.contiguous(), bias.contiguous(), out, hw, group_size, cpg,
                                         num_groups, eps, BLOCK_SIZE=block, num_warps=num_warps)
    return out


class ModelNew(nn.Module):
    def __init__(self, num_groups: int, num_channels: int, eps: float):
        super().__init__()
        self.gn = nn.GroupNorm(num_groups, num_channels, eps=eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return group_norm(x, self.gn.num_groups, self.gn.weight, self.gn.bias, self.gn.eps)
