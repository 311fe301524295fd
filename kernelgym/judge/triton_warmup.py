"""A trusted Triton kernel a warm candidate process compiles and launches before any answer exists.

A process's first Triton launch pays one-time costs besides the kernel's own compile: the CUDA
driver helpers (built into the process's private cache), the compiler back end's start-up and
the tools it probes. On an H100 that first launch took 1.28 s against 0.25 s for a second kernel
of another signature, and it sat inside every evaluation's first trial (and so in every crash's
cost). A warm process pays it here, in `kernelgym.judge.child._warm_up`, off the clock; its
artifacts go to the process's own cache like any other, and the answer's launch hook, installed
later, never sees this launch.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _warm_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    # Loads, masks, math, a reduction and a store: the common path of an answer's kernel.
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    y = tl.exp(x * scale) / tl.sum(tl.exp(x * scale), axis=0)
    tl.store(out_ptr + offsets, y, mask=mask)


def warm_triton(device: str) -> None:
    """Compile and run `_warm_kernel` once on `device` (a CUDA device) and wait for it."""
    import torch

    x = torch.zeros(256, device=device)
    out = torch.empty_like(x)
    _warm_kernel[(1,)](x, out, x.numel(), 1.0, BLOCK=256)
    torch.cuda.synchronize(device)
