# task: conv1d
# style: implicit-GEMM layout: the kernel writes the output position-major, (N, L_out, C_out), as a GEMM tile would, and forward returns `out.permute(0, 2, 1).contiguous()` for the reference's (N, C_out, L_out) layout; the system prompt lists `permute` and `contiguous` among what forward may do, yet the replay judge refuses any output whose buffer a torch copy wrote last ("an output was last written by torch ... write every output in a kernel"), a rule neither data/prompts/system.md nor docs/ANSWER_CONTRACT.md states
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def conv1d_nlc_kernel(x_ptr, w_ptr, b_ptr, out_ptr, C_in, L, L_out, C_out,
                      KSIZE: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr):
    n = tl.program_id(0)
    pid_l = tl.program_id(1)
    ls = pid_l * BLOCK_L + tl.arange(0, BLOCK_L)
    cs = tl.arange(0, BLOCK_C)
    lmask = ls < L_out
    cmask = cs < C_out
    acc = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32)
    for ci in range(0, C_in):
        for k in range(KSIZE):
            xv = tl.load(x_ptr + n * C_in * L + ci * L + ls + k, mask=lmask, other=0.0)
            wv = tl.load(w_ptr + cs * C_in * KSIZE + ci * KSIZE + k, mask=cmask, other=0.0)
            acc += xv[:, None] * wv[None, :]
    acc += tl.load(b_ptr + cs, mask=cmask, other=0.0)[None, :]
    offs = n * L_out * C_out + ls[:, None] * C_out + cs[None, :]
    tl.store(out_ptr + offs, acc, mask=lmask[:, None] & cmask[None, :])


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv = nn.Conv1d(in_channels, out_channels, kernel_size, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        w = self.conv.weight
        n, c_in, length = x.shape
        c_out, _, ksize = w.shape
        l_out = length - ksize + 1
        out_nlc = torch.empty((n, l_out, c_out), device=x.device, dtype=x.dtype)
        block_l = 64
        grid = (n, triton.cdiv(l_out, block_l))
        conv1d_nlc_kernel[grid](x, w, self.conv.bias, out_nlc, c_in, length, l_out, c_out,
                                KSIZE=ksize, BLOCK_L=block_l, BLOCK_C=triton.next_power_of_2(c_out))
        return out_nlc.permute(0, 2, 1).contiguous()
