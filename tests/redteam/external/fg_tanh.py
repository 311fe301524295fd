# task: tanh_activation
# source: FlagOpen/FlagGems src/flag_gems/ops/tanh.py (@532ff438c70343d7aec9becdabb76a71225a0553)
# licence: Apache-2.0, Copyright (c) 2024 BAAI (FlagOpen/FlagGems)
# style: tanh from the libdevice shim bound to a module-level alias `_tanh`; scalar @triton.jit function verbatim (the library decorates it with @pointwise_dynamic); the launching kernel and wrapper are written out as pointwise_dynamic's code generator emits them for contiguous inputs (rank-1 tile loop, one_tile_per_cta constexpr, out0_ptr.type.element_ty cast)
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice as tl_extra_shim  # KernelGym: flag_gems.utils.tl_extra_shim on CUDA

pow = tl_extra_shim.pow
_tanh = tl_extra_shim.tanh


@triton.jit
def tanh_kernel(x):
    return _tanh(x.to(tl.float32))


# ---- the kernel below is what pointwise_dynamic generates for this scalar function on contiguous
# ---- inputs (1-D flat task space, tile loop per CTA); KernelGym wrote it out by hand, simplified
@triton.jit
def tanh_kernel_kernel_rank_1(
    in0_ptr: tl.tensor,  # of tl.pointer_type
    out0_ptr: tl.tensor,  # of tl.pointer_type
    num_tasks,
    tiles_per_cta,
    tile_size: tl.constexpr,
    one_tile_per_cta: tl.constexpr,
):
    pid = tl.program_id(0)
    num_ctas = tl.num_programs(0)
    init_tid = pid * tile_size + tl.arange(0, tile_size)
    if one_tile_per_cta:  # monolitic kernel style
        tid = init_tid
        mask = tid < num_tasks
        in0 = tl.load(in0_ptr + tid, mask=mask)
        out0 = tanh_kernel(in0)
        tl.store(out0_ptr + tid, out0.to(out0_ptr.type.element_ty), mask=mask)
    else:  # grid-stride-loop style kernel
        for j in range(0, tiles_per_cta):
            tid = init_tid + j * tile_size * num_ctas
            mask = tid < num_tasks
            in0 = tl.load(in0_ptr + tid, mask=mask)
            out0 = tanh_kernel(in0)
            tl.store(out0_ptr + tid, out0.to(out0_ptr.type.element_ty), mask=mask)


def tanh_kernel_wrapper_rank_1(in0, out0):
    """Generated wrapper function with launch of the kernel (rank 1)."""
    num_tasks = out0.numel()
    tile_sizes = (512,)
    tile_size = 512
    num_tiles = triton.cdiv(num_tasks, tile_size)
    max_grid_size = (65535, 65535, 65535)
    num_ctas = min(max_grid_size[0], num_tiles)
    tiles_per_cta = triton.cdiv(num_tiles, num_ctas)
    num_warps = 4
    one_tile_per_cta = tiles_per_cta == 1
    grid = (num_ctas, 1, 1)
    tanh_kernel_kernel_rank_1[grid](
        in0, out0, num_tasks, tiles_per_cta=tiles_per_cta, tile_size=tile_size,
        one_tile_per_cta=one_tile_per_cta, num_warps=num_warps)
    return out0


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return tanh_kernel_wrapper_rank_1(x, torch.empty_like(x))
