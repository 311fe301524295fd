# task: cross_entropy_per_sample
# style: a kernel docstring whose second paragraph starts with the word "class" ("class indices come from ..."). kernel_source once refused any kernel line matching `\s*(def|class|@)\b` ("a line inside the kernel that begins like a definition or decorator"); nested definitions are now refused from the AST, and only a line starting with `def ` (which Triton's interpreter would take for the kernel's def) is refused by line
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def cross_entropy_kernel(logits_ptr, targets_ptr, loss_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    """One program per row: loss = logsumexp(row) - row[target].

    class indices come from targets_ptr (int64), one per row.
    """
    row = tl.program_id(0)
    base = logits_ptr + row * stride_row
    cols = tl.arange(0, BLOCK)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(base + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, n_cols, BLOCK):
        x = tl.load(base + start + cols, mask=start + cols < n_cols, other=float("-inf"))
        s += tl.exp(x - row_max)
    lse = row_max + tl.log(tl.sum(s, axis=0))
    target = tl.load(targets_ptr + row)
    picked = tl.load(base + target)
    tl.store(loss_ptr + row, lse - picked)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = logits.contiguous()
        targets = targets.contiguous()
        rows, cols = logits.shape
        loss = torch.empty(rows, device=logits.device, dtype=torch.float32)
        cross_entropy_kernel[(rows,)](logits, targets, loss, cols, logits.stride(0), BLOCK=1024)
        return loss
