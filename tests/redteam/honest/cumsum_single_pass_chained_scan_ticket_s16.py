# task: cumsum
# style: a single-pass chained scan (CUB's decoupled look-back, simplified): each program takes a dynamic tile ticket with tl.atomic_add, waits on its predecessor's flag with an atomic poll, reads the predecessor's inclusive total with a plain load, publishes its own with a plain store then tl.atomic_xchg on the flag; correct on a GPU because tickets are handed out in the order programs start (the predecessor is running or done), and exercises the interpreter's release/acquire model and the s16 lane rule across the atomics
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def chained_scan_kernel(x_ptr, out_ptr, incl_ptr, flag_ptr, counter_ptr, n_cols, TILES, BLOCK: tl.constexpr):
    ticket = tl.atomic_add(counter_ptr, 1)
    row = ticket // TILES
    t = ticket % TILES
    cols = t * BLOCK + tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=m, other=0.0)
    prefix = tl.zeros((), tl.float32)
    if t > 0:
        while tl.atomic_add(flag_ptr + ticket - 1, 0) == 0:
            pass
        prefix = tl.load(incl_ptr + ticket - 1)
    tl.store(incl_ptr + ticket, prefix + tl.sum(x, axis=0))
    tl.atomic_xchg(flag_ptr + ticket, 1)
    tl.store(out_ptr + row * n_cols + cols, tl.cumsum(x, axis=0) + prefix, mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        n = x.shape[-1]
        x2 = x.contiguous().view(-1, n)
        rows = x2.shape[0]
        block = 256
        tiles = triton.cdiv(n, block)
        out = torch.empty_like(x2)
        incl = torch.empty(rows * tiles, dtype=torch.float32, device=x.device)
        flags = torch.zeros(rows * tiles, dtype=torch.int32, device=x.device)
        counter = torch.zeros(1, dtype=torch.int32, device=x.device)
        chained_scan_kernel[(rows * tiles,)](x2, out, incl, flags, counter, n, tiles, BLOCK=block)
        return out.view(x.shape)
