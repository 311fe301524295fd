"""The replay digests its inputs on the GPU (issue 26: on the host it kept torch's CPU pool busy), the parent
wherever its inputs are: the two must agree on any device, for every dtype and size the tasks draw."""

import pytest
import torch

from kernelgym.judge.inputs import digest

pytestmark = pytest.mark.gpu


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool])
def test_digest_is_the_same_on_the_host_and_the_gpu(dtype):
    g = torch.Generator().manual_seed(7)
    big = (torch.randn(3, 1 << 20, generator=g) * 100).to(dtype)  # more than one digest chunk
    odd = (torch.randn(7, generator=g) * 100).to(dtype)  # a byte count not a multiple of 4 for the narrow dtypes
    values = [big, odd, 3, 0.5, torch.empty(0, dtype=dtype)]
    on_gpu = [v.cuda() if isinstance(v, torch.Tensor) else v for v in values]
    assert digest(on_gpu) == digest(values)
    changed = big.clone()
    flat = changed.view(-1)
    flat[12345] = (flat[12345] == 0).to(dtype)  # zero -> one, anything else -> zero
    assert digest([changed.cuda(), *on_gpu[1:]]) != digest(values)
