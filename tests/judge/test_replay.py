"""Judge v4's record/replay core on the CPU interpreter, in one process: what a recording holds,
what the replay checks before it compiles anything, and that a replay computes only what the
recorded kernels compute (no torch hidden from it, no cache across calls, no stale scratch)."""

import importlib.util
import sys
import textwrap

import pytest
import torch

from kernelgym.judge import recorder
from kernelgym.judge.kernel_source import KernelSpec, kernel_problems
from kernelgym.judge.replay import Replayer, ReplayError
from kernelgym.judge.trace import Trace, TraceError

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl

SCALE = tl.constexpr(2.0)


@triton.jit
def _twice(x):
    return x * SCALE


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, _twice(tl.load(x_ptr + offs, mask=m)), mask=m)


def launch(x, out):
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, out, x.numel(), BLOCK=64)
"""

HONEST = HEADER + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        launch(x, out)
        return out
"""

CACHES = HEADER + """
class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.kept = None

    def forward(self, x):
        if self.kept is None:
            self.kept = torch.empty_like(x)
            launch(x, self.kept)
        out = torch.empty_like(x)
        out.copy_(self.kept)  # replays the first call's result
        return out
"""

TORCH_WORK = HEADER + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        launch(x, out)
        return out * 1.0 + x * 0.0 + x  # torch compute beside the kernel
"""

STALE = HEADER + """
class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)  # never written on calls after the first
        if not hasattr(self, "done"):
            launch(x, out)
            self.done = True
        return out
"""


@pytest.fixture(autouse=True)
def _installed():
    recorder.install()


def _load(tmp_path, code, name):
    path = tmp_path / f"{name}.py"
    path.write_text(code)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _record(module, x, warm=True):
    model = module.ModelNew()
    if warm:
        model(torch.randn_like(x))
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())
    specs = {d["name"]: KernelSpec.from_wire(d) for d in rec.kernel_specs()}
    return trace, specs, rec


def _replayer(trace, specs, rec, allow=False):
    return Replayer(trace, specs, dict(rec.state_bytes), "cpu", allow_torch_compute=allow)


def test_an_honest_answer_replays_to_the_right_output_on_new_inputs(tmp_path):
    module = _load(tmp_path, HONEST, "kg_honest")
    trace, specs, rec = _record(module, torch.randn(100))
    assert [e.get("launch") or e.get("aten") for e in trace.entries] == ["aten.empty_like.default", "scale_kernel"]
    assert {b["kind"] for b in trace.buffers} == {"input", "scratch"}
    assert set(specs) == {"scale_kernel", "_twice"} and specs["_twice"].constexpr_constants == ["SCALE"]
    assert kernel_problems(specs) == []
    replay = _replayer(trace, specs, rec)
    y = torch.randn(100)
    assert torch.equal(replay(y), y * 2)


def test_a_cache_across_calls_is_not_replayed(tmp_path):
    module = _load(tmp_path, CACHES, "kg_caches")
    trace, specs, rec = _record(module, torch.randn(100))
    # The recorded call copied state (the first call's output) and launched nothing.
    assert not any("launch" in e for e in trace.entries)
    replay = _replayer(trace, specs, rec)
    y = torch.randn(100)
    assert not torch.allclose(replay(y), y * 2)


def test_scratch_is_poisoned_on_every_replayed_call(tmp_path):
    module = _load(tmp_path, STALE, "kg_stale")
    trace, specs, rec = _record(module, torch.randn(100))
    out = _replayer(trace, specs, rec)(torch.randn(100))
    assert torch.isnan(out).all()


def test_torch_compute_is_recorded_and_not_replayed_unless_allowed(tmp_path):
    module = _load(tmp_path, TORCH_WORK, "kg_torch")
    trace, specs, rec = _record(module, torch.randn(100))
    assert "aten.add.Tensor" in trace.torch_compute and "aten.mul.Tensor" in trace.torch_compute
    with pytest.raises(ReplayError, match="computes outside"):
        _replayer(trace, specs, rec)
    y = torch.randn(100)
    assert torch.allclose(_replayer(trace, specs, rec, allow=True)(y), y * 3)


def test_a_host_read_of_a_value_is_recorded(tmp_path):
    module = _load(tmp_path, HEADER + textwrap.dedent("""
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                if x.sum().item() > 1e9:
                    out.fill_(0)
                launch(x, out)
                return out
    """), "kg_host")
    trace, _, _ = _record(module, torch.randn(10))
    assert trace.host_reads == ["aten._local_scalar_dense.default"]


BAD_KERNELS = {
    "module escape": "def k(x):\n    triton.runtime.jit.os.system('true')\n",
    "numpy handle": "def k(x):\n    x.handle.tofile('/tmp/x')\n",
    "dunder": "def k(x):\n    y = x.__class__\n",
    "lambda": "def k(x):\n    f = lambda v: v\n",
    "default call": "def k(x, n=print('hi')):\n    pass\n",
    "annotation call": "def k(x: print('hi')):\n    pass\n",
    "return annotation call": "def k(x) -> print('hi'):\n    pass\n",
    "import": "def k(x):\n    import os\n",
    "builtin": "def k(x):\n    open('/etc/passwd')\n",
    "getattr dunder": "def k(x):\n    getattr(x, '__class__')\n",
}


@pytest.mark.parametrize("src", list(BAD_KERNELS.values()), ids=list(BAD_KERNELS))
def test_kernel_sources_that_would_run_python_when_compiled_are_refused(src):
    spec = KernelSpec(name="k", src=src, modules={"triton": "triton", "tl": "triton.language"})
    assert kernel_problems({"k": spec})


def test_a_kernel_may_not_name_a_module_outside_triton():
    spec = KernelSpec(name="k", src="def k(x):\n    pass\n", modules={"os": "os"})
    assert any("module os" in p for p in kernel_problems({"k": spec}))


def test_traces_with_views_outside_their_buffer_are_refused():
    ref = {"buf": 0, "offset": 10, "size": [4], "stride": [1], "dtype": "float32"}
    wire = Trace(buffers=[{"kind": "scratch", "index": 0, "nbytes": 16}], entries=[], outputs=[{"t": ref}]).to_wire()
    with pytest.raises(TraceError, match="outside its buffer"):
        Trace.from_wire(wire)
    wire["outputs"] = [{"t": ref | {"offset": 0}}]
    Trace.from_wire(wire)
    wire["entries"] = [{"aten": "os.system", "args": [], "kwargs": {}, "outs": []}]
    with pytest.raises(TraceError, match="operator name"):
        Trace.from_wire(wire)
