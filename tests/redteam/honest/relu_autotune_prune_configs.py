# task: relu
# style: @triton.autotune with prune_configs_by={"early_config_prune": fn} (Triton's own API), named function
import torch
import torch.nn as nn
import triton
import triton.language as tl


def prune_blocks(configs, named_args, **kwargs):
    n = named_args["n_elements"]
    return [c for c in configs if c.kwargs["BLOCK"] <= max(n, 256)]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024}), triton.Config({"BLOCK": 4096})],
    key=["n_elements"],
    prune_configs_by={"early_config_prune": prune_blocks},
)
@triton.jit
def relu_kernel(x_ptr, out_ptr, n_elements, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_elements
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out
