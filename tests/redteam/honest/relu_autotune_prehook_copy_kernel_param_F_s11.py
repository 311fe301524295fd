# task: relu
# style: an autotuned kernel whose pre_hook copies its argument dict (`nargs.copy()`), a kernel parameter and launcher local named `F` beside `import torch.nn.functional as F`, and a dtype loop in a self-test: each refused by a rule of the eleventh session's scan review before its fixes (a module name held by some allowed module; scope-blind aliases; scope-blind class-valued names)
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


def _pre_hook(nargs):
    args = nargs.copy()
    assert args["F"] > 0


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4, pre_hook=_pre_hook),
                          triton.Config({"BLOCK": 1024}, num_warps=4, pre_hook=_pre_hook)], key=["F"])
@triton.jit
def relu_kernel(x_ptr, out_ptr, F, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < F
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        F = x.numel()
        out = torch.empty_like(x)
        relu_kernel[lambda meta: (triton.cdiv(F, meta["BLOCK"]),)](x, out, F)
        return out


if __name__ == "__main__":
    for dt in (torch.float16, torch.float32):
        print(dt, ModelNew()(torch.randn(8, dtype=dt)).shape)
