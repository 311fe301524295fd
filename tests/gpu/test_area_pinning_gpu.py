"""On a GPU the output area's prefix is page-locked (cudaHostRegister on the memfd mapping) and
tensors still round-trip exactly, in both directions of a reply (child: device -> area, parent:
area -> device)."""

from __future__ import annotations

import os

import pytest
import torch

from kernelgym.judge import protocol

pytestmark = pytest.mark.gpu


def test_a_cuda_reply_locks_the_area_and_arrives_exactly():
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    area = protocol.OutputArea.create(16 << 30)
    assert area is not None
    r, w = os.pipe()
    protocol.widen(w)
    try:
        outs = [torch.randn(4096, 4096, device="cuda"), torch.arange(7, device="cuda")]
        protocol.send(w, {"outputs": outs}, area)
        assert area._pinned >= 64 << 20, "cudaHostRegister of the memfd mapping failed"
        got = protocol.recv(r, 1 << 30, area=area, device="cuda")
        assert all(torch.equal(a, b) for a, b in zip(got["outputs"], outs))
    finally:
        os.close(r)
        os.close(w)
        area.close()
    assert area._pinned == 0
