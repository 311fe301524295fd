# task: cumsum
# style: a Hillis-Steele scan through global memory inside one program, with tl.debug_barrier() between each round's loads and stores (lanes read other lanes' elements only once every lane's store is visible: bar.sync on a GPU); the guard of red-team s16's intra-program race rule, which must keep this exact
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scan_rows_barrier_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr, LOG2: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    base = out_ptr + row * n_cols
    tl.store(base + cols, tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0), mask=m)
    tl.debug_barrier()
    for s in tl.static_range(LOG2):
        d = 1 << s
        v = tl.load(base + cols, mask=m, other=0.0)
        u = tl.load(base + cols - d, mask=m & (cols >= d), other=0.0)
        tl.debug_barrier()  # every lane has read before any lane overwrites
        tl.store(base + cols, v + u, mask=m)
        tl.debug_barrier()  # every lane's store is visible before the next round reads


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.shape[-1]
        x2 = x.contiguous().view(-1, n)
        out = torch.empty_like(x2)
        block = triton.next_power_of_2(n)
        scan_rows_barrier_kernel[(x2.shape[0],)](x2, out, n, BLOCK=block, LOG2=block.bit_length() - 1)
        return out.view(x.shape)
