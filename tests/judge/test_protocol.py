"""Parent/child framing: tensors through the sealed output area or the pipe, hostile layouts refused."""

import os
import threading

import pytest
import torch

from kernelgym.judge import protocol


def _roundtrip(obj, area_send=None, area_recv=None, max_bytes=1 << 30):
    r, w = os.pipe()
    protocol.widen(w)
    box = {}
    t = threading.Thread(target=lambda: box.setdefault("msg", protocol.recv(r, max_bytes, None, None, area_recv)))
    t.start()
    protocol.send(w, obj, area_send)
    t.join(timeout=30)
    os.close(r)
    os.close(w)
    return box["msg"]


def test_tensors_travel_through_the_area_and_are_copied_out():
    area = protocol.OutputArea.create(1 << 20)
    assert area is not None
    x = torch.arange(1000, dtype=torch.float32).reshape(10, 100)
    msg = {"outputs": [x, x.t(), torch.tensor(True), torch.empty(0, 3)], "n": 3}
    got = _roundtrip(msg, area, area)
    assert got["n"] == 3
    assert torch.equal(got["outputs"][0], x) and torch.equal(got["outputs"][1], x.t())
    assert got["outputs"][2].item() is True and got["outputs"][3].shape == (0, 3)
    # the parent's copy is its own: writes into the shared pages afterwards change nothing
    area.view(0, 4000).fill_(0)
    assert torch.equal(got["outputs"][0], x)
    area.close()


def test_too_large_for_the_area_falls_back_to_the_pipe():
    area = protocol.OutputArea.create(4096)
    x = torch.randn(10_000)
    got = _roundtrip({"outputs": [x]}, area, area)
    assert torch.equal(got["outputs"][0], x)
    area.close()


def test_the_child_cannot_resize_a_sealed_area():
    area = protocol.OutputArea.create(1 << 16)
    child_side = protocol.OutputArea.attach(os.dup(area.fd))
    assert child_side.capacity == 1 << 16
    for size in (0, 1 << 20):
        with pytest.raises(PermissionError):
            os.ftruncate(child_side.fd, size)
    child_side.close()
    area.close()


@pytest.mark.parametrize("offset", [-64 + 64 * (1 << 14), 3, 1 << 40])
def test_offsets_outside_the_area_are_a_violation(offset):
    """A hostile layout pointing past the area (or misaligned) is refused before any copy."""
    area = protocol.OutputArea.create(1 << 20)
    r, w = os.pipe()
    meta = protocol.encode({"skeleton": {"outputs": [{"__kernelgym_tensor__": 0}]},
                            "tensors": [("float32", [1024], 4096, offset)]})
    os.write(w, protocol._HEADER.pack(len(meta)) + meta)
    with pytest.raises(protocol.ChannelViolation):
        protocol.recv(r, 1 << 30, None, None, area)
    os.close(r)
    os.close(w)
    area.close()


def test_an_area_layout_without_an_area_is_a_violation():
    r, w = os.pipe()
    meta = protocol.encode({"skeleton": [{"__kernelgym_tensor__": 0}], "tensors": [("float32", [4], 16, 0)]})
    os.write(w, protocol._HEADER.pack(len(meta)) + meta)
    with pytest.raises(protocol.ChannelViolation):
        protocol.recv(r, 1 << 30)
    os.close(r)
    os.close(w)
