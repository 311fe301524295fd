# task: max_reduction_dim
# source: FlagOpen/FlagGems src/flag_gems/ops/max.py (flag-gems 5.0.2, PyPI wheel)
# licence: Apache-2.0, Copyright (c) 2024 BAAI (FlagOpen/FlagGems)
# style: max_dim: dim_compress (permute the reduced dim last, .contiguous()), 2-D tile loop with tl.max(..., return_indices=True) and a running tl.where update, values and int64 indices stored, namedtuple result; @libentry() and logger.debug dropped, @libtuner(configs=runtime.get_tuned_config("naive_reduction")) written as triton.autotune over that YAML entry's configs; tle.program_id, get_dtype_min and dim_compress inlined verbatim
# cpu: no (get_dtype_min(dtype) reads dtype.value: compiled, the dtype argument is a constexpr; the Triton 3.x CPU interpreter passes a bare tl.dtype: AttributeError 'dtype' object has no attribute 'value'; the mask also combines tensor masks with Python `and`, see fg_log_softmax)
from collections import namedtuple

import torch
import torch.nn as nn
import triton
import triton.language as tl
torch_device_fn = torch.cuda  # KernelGym: flag_gems.runtime.torch_device_fn is torch.cuda on NVIDIA


# ---- inlined from src/flag_gems/utils/triton_lang_extension.py (same version) ----
@triton.jit
def tle_program_id(  # `tle.program_id` in the source
    axis: int,
) -> tl.tensor:
    return tl.program_id(axis).to(tl.int64)
# ---- end ----


# ---- inlined from src/flag_gems/utils/limits.py (same version) ----
@triton.jit
def get_dtype_min(dtype):
    """get a value which is less that all other values of that dtype"""
    dtype_ = dtype.value  # tl.dtype
    if dtype_.is_floating():
        value: tl.constexpr = float("-inf")
        return value
    if dtype_.is_int_signed():
        width: tl.constexpr = dtype_.int_bitwidth
        value: tl.constexpr = -1 * 2 ** (width - 1)
        return value
    if dtype_.is_int_unsigned():
        value: tl.constexpr = 0
        return value
# ---- end ----


# ---- inlined from src/flag_gems/utils/shape_utils.py (same version) ----
def dim_compress(inp, dims):
    if isinstance(dims, int):
        dims = [dims]
    dim = inp.ndim
    stride = inp.stride()
    batch_dim = [i for i in range(dim) if i not in dims]
    sorted_reduction_dim = sorted(dims, key=lambda x: stride[x], reverse=True)
    order = batch_dim + sorted_reduction_dim
    return inp.permute(order).contiguous()
# ---- end ----


@triton.autotune(
    configs=[  # KernelGym: runtime.get_tuned_config("naive_reduction") expanded from runtime/backend/_nvidia/tune_configs.yaml
        triton.Config({"BLOCK_M": m, "BLOCK_N": 1024}, num_warps=4) for m in (1, 2, 4, 8)
    ],
    key=["M", "N"],
)
@triton.jit
def max_kernel(
    inp,
    out_value,
    out_index,
    M,
    N,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    # set offset
    pid_m = tle_program_id(0)
    m_offset = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)

    dtype = inp.type.element_ty
    acc_type = tl.float32 if dtype is tl.bfloat16 else dtype
    min_value = get_dtype_min(dtype)
    result_value = tl.full([BLOCK_M], value=min_value, dtype=acc_type)
    result_index = tl.zeros([BLOCK_M], dtype=tl.int64)
    for i in range(0, N, BLOCK_N):
        n_offset = i + tl.arange(0, BLOCK_N)
        offset = m_offset[:, None] * N + n_offset[None, :]
        # set mask
        mask = m_offset[:, None] < M and n_offset[None, :] < N
        inp_ptrs = inp + offset
        inp_vals = tl.load(inp_ptrs, mask=mask, other=min_value)
        max_value, max_index = tl.max(inp_vals, axis=1, return_indices=True)
        update_mask = max_value > result_value
        result_value = tl.where(update_mask, max_value, result_value)
        result_index = tl.where(update_mask, i + max_index, result_index)
    mask1 = m_offset < M
    offset_index = m_offset
    out_value_ptrs = out_value + offset_index
    out_index_ptrs = out_index + offset_index

    tl.store(out_value_ptrs, result_value, mask=mask1)
    tl.store(out_index_ptrs, result_index, mask=mask1)


def max_dim(inp, dim=None, keepdim=False):
    assert dim >= -inp.ndim and dim < inp.ndim, "Invalid dim"
    shape = list(inp.shape)
    dim = dim % inp.ndim
    inp = dim_compress(inp, dim)
    N = shape[dim]
    shape[dim] = 1
    M = inp.numel() // N

    out_value = torch.empty(shape, dtype=inp.dtype, device=inp.device)
    out_index = torch.empty(shape, dtype=torch.int64, device=inp.device)

    if not keepdim:
        out_value = torch.squeeze(out_value, dim)
        out_index = torch.squeeze(out_index, dim)

    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]),)
    with torch_device_fn.device(inp.device):
        max_kernel[grid](inp, out_value, out_index, M, N)
    Max_out = namedtuple("max", ["values", "indices"])
    out = Max_out(values=out_value, indices=out_index)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return max_dim(x, dim=self.dim).values
