"""Replayed trials are consecutive calls of one model (red-team v4i): each starts from the state the
previous trial's call left, as the real model's next call does. The replay used to restore the
recorded state before every call, so kernels that dirtied a workspace kept on the model (and a
forward that cleaned it only after the unrecorded warm call) were right on every replay and wrong
on every real call after the first."""

import importlib.util
import sys

import pytest
import torch

from kernelgym.judge import recorder
from kernelgym.judge.kernel_source import KernelSpec
from kernelgym.judge.replay import Replayer
from kernelgym.judge.trace import Trace

SOURCE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def accumulate_kernel(x_ptr, acc_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(acc_ptr + offs, tl.load(acc_ptr + offs, mask=mask) + tl.load(x_ptr + offs, mask=mask), mask=mask)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, clean):
        super().__init__()
        self.acc = torch.zeros(64)  # a workspace kept on the model: state
        self.clean = clean

    def forward(self, x):
        n = x.numel()
        accumulate_kernel[(1,)](x, self.acc, n, BLOCK=64)
        out = torch.empty_like(x)
        copy_kernel[(1,)](self.acc, out, n, BLOCK=64)
        if self.clean:  # a workspace honestly reset by a kernel before the call returns
            copy_kernel[(1,)](self.zeros, self.acc, n, BLOCK=64)
        return out
"""


@pytest.fixture(autouse=True)
def _installed():
    recorder.install()


def _replayer(tmp_path, clean):
    path = tmp_path / "kg_state_carry.py"
    path.write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("kg_state_carry", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kg_state_carry"] = module
    spec.loader.exec_module(module)
    model = module.ModelNew(clean)
    model.zeros = torch.zeros(64)
    x = torch.randn(64)
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())
    specs = {d["name"]: KernelSpec.from_wire(d) for d in rec.kernel_specs()}
    return Replayer(trace, specs, dict(rec.state_bytes), "cpu", allow_torch_compute=False)


def test_restored_state_hides_a_dirty_workspace_and_carried_state_shows_it(tmp_path):
    replay = _replayer(tmp_path, clean=False)
    a, b = torch.randn(64), torch.randn(64)
    for x in (a, b):  # restored before every call: each looks right
        replay.prepare([x])
        assert torch.equal(replay.run(), x)
    replay.prepare([a], carry_state=True)  # nothing kept yet: the recorded state
    assert torch.equal(replay.run(), a)
    replay.keep_state()
    replay.prepare([b], carry_state=True)  # the second consecutive call sees the first one's sums
    assert torch.allclose(replay.run(), a + b)
    replay.prepare([b])  # a call without the carry still starts from the recorded bytes
    assert torch.equal(replay.run(), b)


def test_a_workspace_the_kernels_reset_is_right_on_consecutive_calls(tmp_path):
    replay = _replayer(tmp_path, clean=True)
    for _ in range(3):
        x = torch.randn(64)
        replay.prepare([x], carry_state=True)
        assert torch.equal(replay.run(), x)
        replay.keep_state()


HOST_ACCUMULATOR = SOURCE.replace("class ModelNew", "class Unused") + """

class ModelNew(nn.Module):
    def forward(self, x):
        n = x.numel()
        acc = torch.tensor([0.0] * 64)  # zeros from host data, rebuilt by every call (state with its bytes as built)
        accumulate_kernel[(1,)](x, acc, n, BLOCK=64)
        out = torch.empty_like(x)
        copy_kernel[(1,)](acc, out, n, BLOCK=64)
        return out
"""


def test_a_tensor_built_from_host_data_each_call_is_restored_not_carried(tmp_path):
    path = tmp_path / "kg_host_acc.py"
    path.write_text(HOST_ACCUMULATOR)
    spec = importlib.util.spec_from_file_location("kg_host_acc", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kg_host_acc"] = module
    spec.loader.exec_module(module)
    model = module.ModelNew()
    x = torch.randn(64)
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())
    assert [b.get("host", False) for b in trace.buffers if b["kind"] == "state"] == [True]
    specs = {d["name"]: KernelSpec.from_wire(d) for d in rec.kernel_specs()}
    replay = Replayer(trace, specs, dict(rec.state_bytes), "cpu", allow_torch_compute=False)
    for _ in range(3):  # as the real model: every call starts from fresh zeros
        x = torch.randn(64)
        replay.prepare([x], carry_state=True)
        assert torch.equal(replay.run(), x)
        replay.keep_state()


def test_a_call_that_reuses_a_host_tensor_the_previous_call_built_is_a_different_call(tmp_path):
    source = SOURCE.replace("class ModelNew", "class Unused") + """

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.acc = None

    def forward(self, x):
        if self.acc is None:  # built from host data once, then kept (and left dirty) on the model
            self.acc = torch.tensor([0.0] * 64)
        accumulate_kernel[(1,)](x, self.acc, x.numel(), BLOCK=64)
        out = torch.empty_like(x)
        copy_kernel[(1,)](self.acc, out, x.numel(), BLOCK=64)
        return out
"""
    path = tmp_path / "kg_host_kept.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("kg_host_kept", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kg_host_kept"] = module
    spec.loader.exec_module(module)
    model = module.ModelNew()
    traces = []
    for _ in range(2):
        x = torch.randn(64)
        rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
        with torch.no_grad(), rec:
            out = model(x)
        traces.append(rec.finish(out))
    assert [b.get("host", False) for b in traces[0].buffers if b["kind"] == "state"] == [True]
    assert [b.get("host", False) for b in traces[1].buffers if b["kind"] == "state"] == [False]
    assert recorder.first_difference(*traces)
