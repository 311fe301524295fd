# task: linear_bias_relu
# style: the weight, transposed once in __init__ to K-major (a common layout choice), is kept on a small plain helper object (`PackedLinear`, not an nn.Module) that ModelNew holds; recorder.state_storages looks for state only through tensors, nn.Modules, lists/tuples/sets and dicts (and 6 levels deep), so the replay takes the packed weight for scratch, hands the kernel 0xFF bytes (NaN) and the honest answer gets wrong_output. The same happens to a tensor kept in a dataclass, a functools.partial, a closure or a class attribute of ModelNew. The helper is not moved by `.to(device)`, so forward rebuilds it once on the input's device
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def linear_relu_kernel(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K,
                       stride_xm, stride_xk, stride_wn, stride_wk, stride_om, stride_on,
                       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        x = tl.load(x_ptr + offs_m[:, None] * stride_xm + (k + offs_k)[None, :] * stride_xk,
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + offs_n[None, :] * stride_wn + (k + offs_k)[:, None] * stride_wk,
                    mask=(offs_n[None, :] < N) & ((k + offs_k)[:, None] < K), other=0.0)
        acc += tl.dot(x, w, input_precision="ieee")
    b = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = tl.maximum(acc + b[None, :], 0.0)
    tl.store(out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on, acc,
             mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


class PackedLinear:
    """The layer's parameters as the kernel reads them: W^T (K x N, row-major) and the bias."""

    def __init__(self, linear: nn.Linear):
        self.w_t = linear.weight.detach().t().contiguous()
        self.bias = linear.bias.detach()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        self.packed = PackedLinear(self.fc)

    def forward(self, x):
        if self.packed.w_t.device != x.device:  # built on the CPU in __init__; the layer has moved since
            self.packed = PackedLinear(self.fc)
        x = x.contiguous()
        M, K = x.shape
        w_t = self.packed.w_t
        N = w_t.shape[1]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        grid = (triton.cdiv(M, 32), triton.cdiv(N, 32))
        linear_relu_kernel[grid](x, w_t, self.packed.bias, out, M, N, K,
                                 x.stride(0), x.stride(1), w_t.stride(1), w_t.stride(0),
                                 out.stride(0), out.stride(1), BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        return out
