"""Honest answers the replay once judged wrongly (tests/redteam/honest): what the recorder makes of
state kept off the module, of constants built from host data in forward, of a layout copy of a
kernel's output, and of host TMA descriptors; and that the stricter cases stay strict (scratch the
call allocates is poisoned, a kept output is not replayed, a copy of an input is torch's)."""

import importlib.util
import sys
import textwrap

import pytest
import torch

from kernelgym.judge import recorder
from kernelgym.judge.kernel_source import KernelSpec
from kernelgym.judge.replay import Replayer
from kernelgym.judge.trace import Trace, TraceError

HEADER = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scale_kernel(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * tl.load(s_ptr + offs % 4), mask=m)


def launch(x, s, out):
    scale_kernel[(triton.cdiv(x.numel(), 64),)](x, s, out, x.numel(), BLOCK=64)
"""


@pytest.fixture(autouse=True)
def _installed():
    recorder.install()


def _load(tmp_path, body, name):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _record(module, x, compute=False):
    model = module.ModelNew()
    model(torch.randn_like(x))  # the warm call
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())
    specs = {d["name"]: KernelSpec.from_wire(d) for d in rec.kernel_specs()}
    return trace, Replayer(trace, specs, dict(rec.state_bytes), "cpu", allow_torch_compute=compute)


def _kinds(trace):
    return [b["kind"] for b in trace.buffers]


def test_state_kept_on_a_plain_helper_object_is_restored(tmp_path):
    module = _load(tmp_path, """
        class Packed:  # not an nn.Module: found by when it was allocated, not by where it is kept
            def __init__(self):
                self.s = torch.tensor([1.0, 2.0, 3.0, 4.0])

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.packed = Packed()

            def forward(self, x):
                out = torch.empty_like(x)
                launch(x, self.packed.s, out)
                return out
    """, "kg_rh_helper")
    trace, replay = _record(module, torch.randn(64))
    assert sorted(_kinds(trace)) == ["input", "scratch", "state"]
    y = torch.randn(64)
    assert torch.equal(replay(y), y * torch.tensor([1.0, 2.0, 3.0, 4.0]).repeat(16))


def test_scratch_the_call_allocates_stays_poisoned(tmp_path):
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                s = torch.empty(4)  # allocated in the call and never written: NaN in the replay
                out = torch.empty_like(x)
                launch(x, s, out)
                return out
    """, "kg_rh_scratch")
    trace, replay = _record(module, torch.randn(64))
    assert sorted(_kinds(trace)) == ["input", "scratch", "scratch"]
    assert torch.isnan(replay(torch.randn(64))).all()


def test_an_output_kept_across_calls_off_the_module_must_be_written_by_the_call(tmp_path):
    module = _load(tmp_path, """
        class Helper:  # not an nn.Module, not a module global: not the model's own tensor
            pass

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.helper = Helper()
                self.helper.s = torch.ones(4)

            def forward(self, x):
                if not hasattr(self.helper, "out"):  # the first call's result, returned again
                    self.helper.out = torch.empty_like(x)
                    launch(x, self.helper.s, self.helper.out)
                return self.helper.out
    """, "kg_rh_kept")
    trace, replay = _record(module, torch.randn(64))
    out_buf = trace.outputs[0]["t"]["buf"]
    # No entry of the call wrote it: an earlier call's result, kept as state so that the judge calls it RH-10 as
    # for `self.out` (red-team s15; as scratch it was poisoned, a proven cache judged only `wrong_output`)
    assert trace.buffers[out_buf]["kind"] == "state"
    assert out_buf not in trace.launch_buffers()


def test_a_reused_output_buffer_written_every_call_replays(tmp_path):
    module = _load(tmp_path, """
        class Pool:
            def __init__(self):
                self.bufs = {}

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.pool = Pool()
                self.pool.s = torch.full((4,), 3.0)

            def forward(self, x):
                out = self.pool.bufs.setdefault(x.shape, torch.empty_like(x))
                launch(x, self.pool.s, out)
                return out
    """, "kg_rh_pool")
    trace, replay = _record(module, torch.randn(64))
    assert trace.buffers[trace.outputs[0]["t"]["buf"]]["kind"] == "scratch"
    y = torch.randn(64)
    assert torch.equal(replay(y), y * 3)


def test_a_constant_built_from_host_data_in_forward_is_replayed_with_its_bytes(tmp_path):
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                launch(x, torch.tensor([0.5, -1.0, 2.0, 0.25], dtype=x.dtype, device=x.device), out)
                return out
    """, "kg_rh_const")
    trace, replay = _record(module, torch.randn(64))
    assert "state" in _kinds(trace)
    y = torch.randn(64)
    assert torch.equal(replay(y), y * torch.tensor([0.5, -1.0, 2.0, 0.25]).repeat(16))


def test_host_constants_beyond_the_bound_are_outside_the_contract(tmp_path):
    module = _load(tmp_path, """
        TABLE = [0.5] * (1 << 19)  # 2 MiB of float32 once built

        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                launch(x, torch.tensor(TABLE, device=x.device), out)
                return out
    """, "kg_rh_big_const")
    model = module.ModelNew()
    x = torch.randn(64)
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    problems = rec.finish(out).unreplayable
    assert problems and "bytes of tensors from host data" in problems[0] and "__init__" in problems[0]


def _kernel_then_copy(tmp_path, final, name):
    module = _load(tmp_path, f"""
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                out = torch.empty_like(x)
                launch(x, self.s, out)
                return {final}
    """, name)
    return _record(module, torch.randn(8, 8))


def test_a_layout_copy_of_a_kernels_output_is_the_kernels(tmp_path):
    trace, replay = _kernel_then_copy(tmp_path, "out.t().contiguous()", "kg_rh_layout")
    assert trace.torch_made_outputs() == []
    y = torch.randn(8, 8)
    assert torch.equal(replay(y), y.t().contiguous())


def test_a_copy_of_an_input_beside_a_kernel_is_torchs(tmp_path):
    trace, _ = _kernel_then_copy(tmp_path, "x.t().contiguous()", "kg_rh_input_copy")
    assert trace.torch_made_outputs() == ["aten.clone.default"]
    trace, _ = _kernel_then_copy(tmp_path, "out.fill_(1.0)", "kg_rh_fill")
    assert trace.torch_made_outputs() == ["aten.fill_.Scalar"]


DESC_KERNEL = """
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def desc_kernel(x_desc, o_desc, BLOCK: tl.constexpr):
    r = tl.program_id(0) * BLOCK
    o_desc.store([r, 0], x_desc.load([r, 0]) * 2.0)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        xd = TensorDescriptor.from_tensor(x, [16, 16])
        od = TensorDescriptor.from_tensor(out, [16, 16])
        desc_kernel[(x.shape[0] // 16,)](xd, od, BLOCK=16)
        return out
"""


def test_a_host_tensor_descriptor_is_recorded_as_a_view_and_rebuilt(tmp_path, monkeypatch):
    module = _load(tmp_path, DESC_KERNEL, "kg_rh_desc")
    x = torch.randn(32, 16)
    model = module.ModelNew()
    rec = recorder.Recorder([x], {})
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())
    launch = next(e for e in trace.entries if "launch" in e)
    ref, block, padding, tf32 = launch["args"][0]["desc"]
    assert (ref["t"]["size"], ref["t"]["stride"], block, padding, tf32) == ([32, 16], [16, 1], [16, 16], "zero", False)
    assert trace.torch_made_outputs() == []
    specs = {d["name"]: KernelSpec.from_wire(d) for d in rec.kernel_specs()}
    from kernelgym.judge import replay as replay_module

    if any(".load" in p for p in replay_module.kernel_problems(specs)):  # a descriptor's methods, not yet allowed
        pytest.skip("kernel_source does not yet list tensor descriptors' methods among Triton values'")
    y = torch.randn(32, 16)
    assert torch.equal(Replayer(trace, specs, {}, "cpu", allow_torch_compute=False)(y), y * 2)


@pytest.mark.parametrize("bad", [
    {"block": [16, 3]},  # not a power of two
    {"stride": [16, 2]},  # last dimension not contiguous
    {"size": [64, 16]},  # beyond its buffer
    {"padding": "inf"},
    {"stride": [3, 1], "size": [32, 3], "block": [16, 4]},  # rows not 16-byte aligned
])
def test_tensor_descriptors_triton_would_not_build_are_refused(bad):
    ref = {"buf": 0, "offset": 0, "size": bad.get("size", [32, 16]), "stride": bad.get("stride", [16, 1]),
           "dtype": "float32"}
    desc = {"desc": [{"t": ref}, bad.get("block", [16, 16]), bad.get("padding", "zero"), False]}
    wire = Trace(buffers=[{"kind": "scratch", "index": 0, "nbytes": 32 * 16 * 4}],
                 entries=[{"launch": "k", "grid": [1, 1, 1], "args": [desc], "options": {}}], outputs=[]).to_wire()
    with pytest.raises(TraceError):
        Trace.from_wire(wire)
    good = {"desc": [{"t": ref | {"size": [32, 16], "stride": [16, 1]}}, [16, 16], "zero", False]}
    wire["entries"][0]["args"] = [good]
    Trace.from_wire(wire)


def test_a_result_kept_off_the_module_from_an_earlier_call_is_stale_state(tmp_path):
    module = _load(tmp_path, """
        class Memo:  # an earlier call's result, keyed on the shape, kept on a helper object
            pass

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.memo = Memo()
                self.memo.s = torch.ones(4)

            def forward(self, x):
                out = torch.empty_like(x)
                if not hasattr(self.memo, "result"):
                    self.memo.result = torch.empty_like(x)
                    launch(x, self.memo.s, self.memo.result)
                out.copy_(self.memo.result)
                return out
    """, "kg_rh_memo")
    trace, replay = _record(module, torch.randn(64))
    assert "state" in _kinds(trace) and not any("launch" in e for e in trace.entries)
    y = torch.randn(64)
    assert not torch.allclose(replay(y), y)  # the bytes the warm call left, not this call's result


def _prep_names(trace):
    prep = trace.preparation_entries()
    return [(e["aten"], i in prep) for i, e in enumerate(trace.entries) if "aten" in e]


def test_copies_that_only_prepare_inputs_are_preparation(tmp_path):
    # FlagGems' dim_compress: the input permuted and made contiguous before the kernel reads it.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                xt = x.t().contiguous()
                out = torch.zeros_like(xt)
                launch(xt, self.s, out)
                return out
    """, "kg_rh_prep")
    trace, _ = _record(module, torch.randn(8, 8))
    marked = dict(_prep_names(trace))
    assert marked["aten.clone.default"] is True, marked
    # The output's own fill, handed to the kernel afterwards: the kernel writes its result there.
    assert marked["aten.zeros_like.default"] is True


def test_torch_work_on_what_a_kernel_wrote_is_not_preparation(tmp_path):
    # A kernel's result steering a torch fill (the v4d masked_fill_ exploit's shape), and a copy of a
    # kernel's output: neither only prepares inputs.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                mask = torch.empty_like(x)
                launch(x, self.s, mask)
                out = x.clone()
                out.masked_fill_(mask.bool(), 0.0)
                return out.t().contiguous()
    """, "kg_rh_post")
    # masked_fill_ is torch compute (RH-01 at record time); replayed where a task allows torch ops, and
    # its trace must still not file the work as input preparation
    trace, _ = _record(module, torch.randn(8, 8), compute=True)
    marked = dict(_prep_names(trace))
    assert marked.get("aten.masked_fill_.Scalar") is False, marked


def test_an_input_copy_torch_then_changes_is_not_preparation(tmp_path):
    # The v4d exploit: torch clones the input into the output and a fill steered by the kernel's mask
    # changes it; the clone prepares nothing, it is part of torch's work (RH-03 weighs it).
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                mask = torch.empty_like(x)
                launch(x, self.s, mask)
                out = x.clone()
                out.masked_fill_(mask.bool(), 0.0)
                launch(out, self.s, out)
                return out
    """, "kg_rh_post2")
    # masked_fill_ is torch compute (RH-01 at record time); replayed where a task allows torch ops, and
    # its trace must still not file the work as input preparation
    trace, _ = _record(module, torch.randn(8, 8), compute=True)
    marked = _prep_names(trace)
    assert not any(prep for name, prep in marked if name.startswith(("aten.clone", "aten.masked_fill_"))), marked


def test_an_output_copied_then_written_in_place_by_a_kernel_is_preparation(tmp_path):
    # The honest clone-then-in-place ReLU (tests/redteam/honest/relu_clone_then_inplace_kernel.py): its
    # clone was half the device time and RH-03 called it a cheat on an H200.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                out = x.contiguous().clone()
                launch(out, self.s, out)
                return out
    """, "kg_rh_inplace")
    trace, _ = _record(module, torch.randn(8, 8))
    assert dict(_prep_names(trace))["aten.clone.default"] is True


def test_an_output_copy_no_kernel_is_handed_afterwards_is_torchs(tmp_path):
    # The kernel runs first and writes scratch; the output is torch's copy of the input, which no
    # later launch touches: torch made it.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                tmp = torch.empty_like(x)
                launch(x, self.s, tmp)
                out = x.clone()
                return out, tmp
    """, "kg_rh_untouched_copy")
    trace, _ = _record(module, torch.randn(8, 8))
    assert dict(_prep_names(trace))["aten.clone.default"] is False


def test_torch_work_on_state_a_kernel_wrote_is_not_preparation(tmp_path):
    # Red team v4g (tests/redteam/exploits/rh03_relu_v4g_state_mask_masked_fill_prep.py): the v4d
    # exploit with the kernel's mask kept in a buffer of the model. The state's bytes after a launch
    # was handed it may be the kernel's result, so torch work reading it prepares nothing.
    module = _load(tmp_path, """
        @triton.jit
        def neg_kernel(x_ptr, m_ptr, also_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            inside = offs < n
            tl.store(m_ptr + offs, tl.load(x_ptr + offs, mask=inside, other=0.0) < 0.0, mask=inside)

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mask", torch.zeros(64, dtype=torch.bool))

            def forward(self, x):
                m = self.mask.view(x.shape)
                neg_kernel[(1,)](x, m, m, x.numel(), BLOCK=64)
                out = x.clone()
                out.masked_fill_(m, 0.0)
                neg_kernel[(1,)](x, m, out, x.numel(), BLOCK=64)
                return out
    """, "kg_rh_state_mask")
    # masked_fill_ is torch compute (RH-01 at record time); replayed where a task allows torch ops, and
    # its trace must still not file the work as input preparation
    trace, _ = _record(module, torch.randn(8, 8), compute=True)
    marked = _prep_names(trace)
    assert not any(prep for name, prep in marked if name.startswith(("aten.clone", "aten.masked_fill_"))), marked


def test_state_copied_before_any_launch_stays_preparation(tmp_path):
    # A weight made contiguous before the kernels run is still input preparation.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.w = torch.randn(8, 8)
                self.s = torch.ones(4)

            def forward(self, x):
                wt = self.w.t().contiguous()
                out = torch.empty_like(x)
                launch(wt, self.s, out)
                return out
    """, "kg_rh_state_prep")
    trace, _ = _record(module, torch.randn(8, 8))
    assert dict(_prep_names(trace))["aten.clone.default"] is True


def test_state_torch_copied_a_kernel_result_into_is_not_clean(tmp_path):
    # The same laundering through torch: the kernel's mask is copied into the model's buffer first.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)
                self.register_buffer("keep", torch.zeros(8, 8))

            def forward(self, x):
                mask = torch.empty_like(x)
                launch(x, self.s, mask)
                self.keep.copy_(mask)
                out = x.clone()
                out.copy_(self.keep)
                launch(out, self.s, out)
                return out
    """, "kg_rh_state_laundered")
    trace, _ = _record(module, torch.randn(8, 8))
    marked = _prep_names(trace)
    assert not any(prep for name, prep in marked if name.startswith("aten.copy_")), marked


# ---------------------------------------------------------------- red-team round v4j
ACC_KERNEL = """
@triton.jit
def row_sum_kernel(x_ptr, acc_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=0.0)
    tl.atomic_add(acc_ptr + row, tl.sum(v, axis=0).to(acc_ptr.dtype.element_ty))
"""


def test_a_host_built_output_accumulator_is_replayed_with_its_bytes(tmp_path):
    # `torch.tensor([0.0] * n)` as the output a kernel accumulates into: it stays a host constant (restored
    # before every call) instead of scratch carrying the host flag, which made the record malformed.
    module = _load(tmp_path, textwrap.indent(ACC_KERNEL, " " * 8) + """
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.tensor([0.0] * x.shape[0], dtype=x.dtype, device=x.device)
                row_sum_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=16)
                return out
    """, "kg_v4j_host_out")
    trace, replay = _record(module, torch.randn(8, 16))
    (ref,) = [o["t"] for o in trace.outputs]
    assert trace.buffers[ref["buf"]] == trace.buffers[ref["buf"]] | {"kind": "state", "host": True}
    assert trace.torch_made_outputs() == []
    for _ in range(2):  # restored before each call, never carried
        y = torch.randn(8, 16)
        torch.testing.assert_close(replay(y), y.sum(1))


def test_a_cast_copy_of_a_workspace_a_kernel_wrote_is_the_kernels(tmp_path):
    module = _load(tmp_path, textwrap.indent(ACC_KERNEL, " " * 8) + """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("acc", torch.zeros(8, dtype=torch.float64))

            def forward(self, x):
                self.acc.zero_()
                row_sum_kernel[(x.shape[0],)](x, self.acc, x.shape[1], BLOCK=16)
                return self.acc.to(x.dtype)
    """, "kg_v4j_state_cast")
    trace, replay = _record(module, torch.randn(8, 16))
    assert trace.torch_made_outputs() == []
    y = torch.randn(8, 16)
    torch.testing.assert_close(replay(y), y.sum(1))
    # a cast copy of an input a kernel read is still torch's
    module = _load(tmp_path, textwrap.indent(ACC_KERNEL, " " * 8) + """
        class ModelNew(nn.Module):
            def forward(self, x):
                acc = torch.zeros(x.shape[0], dtype=torch.float64, device=x.device)
                row_sum_kernel[(x.shape[0],)](x, acc, x.shape[1], BLOCK=16)
                return x.to(torch.float64)
    """, "kg_v4j_input_cast")
    trace, _ = _record(module, torch.randn(8, 16))
    assert trace.torch_made_outputs() == ["aten._to_copy.default"]


def test_padding_an_input_is_data_movement_and_replays(tmp_path):
    module = _load(tmp_path, """
        import torch.nn.functional as F

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.s = torch.ones(4)

            def forward(self, x):
                xp = F.pad(x, (1, 1))
                out = torch.empty_like(xp)
                launch(xp, self.s, out)
                return torch.cat([out, out], dim=0)
    """, "kg_v4j_pad")
    trace, replay = _record(module, torch.randn(4, 6))
    assert trace.torch_compute == [] and trace.unreplayable == [] and trace.torch_made_outputs() == []
    y = torch.randn(4, 6)
    padded = torch.nn.functional.pad(y, (1, 1))
    assert torch.equal(replay(y), torch.cat([padded, padded]))


def test_a_record_beyond_the_traces_limits_is_unreplayable_and_keeps_its_torch_compute(tmp_path):
    # A 17-dim allocation used to make the record malformed (`crashed`) before its RH-01 was read.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                torch.empty([1] * 17, device=x.device)
                return torch.relu(x)
    """, "kg_v4j_17dims")
    model, x = module.ModelNew(), torch.randn(8)
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())  # valid: the parent reads its verdicts
    assert any(t.startswith("aten.relu") for t in trace.torch_compute), trace.torch_compute
    assert any("cannot be replayed" in u and "malformed tensor view" in u for u in trace.unreplayable), trace.unreplayable
    # too many host-built bytes: the whole buffer table is left out, still a valid record
    big = Trace(buffers=[{"kind": "state", "index": 0, "nbytes": 2 << 20, "host": True}], entries=[], outputs=[],
                torch_compute=["aten.add.Tensor"]).within_limits()
    big.validate()  # flagged buffers become scratch (the recorder named the overflow): never the model's state
    assert big.buffers == [{"kind": "scratch", "index": 0, "nbytes": 2 << 20}]
    assert big.torch_compute == ["aten.add.Tensor"] and big.unreplayable


def _view(buf, n=4):
    return {"t": {"buf": buf, "offset": 0, "size": [n], "stride": [1], "dtype": "float32"}}


def test_cuts_keep_every_outputs_buffer_kind():
    # Red-team v4k: an unused 17-dim extra output emptied every output, hiding a view of the model's state.
    state = {"kind": "state", "index": 0, "nbytes": 16}
    bad = {"t": {"buf": 0, "offset": 0, "size": [1] * 17, "stride": [1] * 17, "dtype": "float32"}}
    cut = Trace(buffers=[state], entries=[], outputs=[_view(0), bad], is_sequence=True).within_limits()
    assert cut.outputs == [_view(0), None] and cut.unreplayable
    # Too many buffers: only the outputs' own are kept, renumbered.
    many = [{"kind": "scratch", "index": 0, "nbytes": 16}] * 20_001 + [state]
    cut = Trace(buffers=many, entries=[], outputs=[_view(20_001)]).within_limits()
    cut.validate()
    assert cut.buffers == [state] and cut.outputs == [_view(0)] and cut.entries == []


def test_a_cat_with_an_empty_tail_is_a_copy_of_the_kernels_body():
    buffers = [{"kind": "input", "index": 0, "nbytes": 16}, {"kind": "scratch", "index": 0, "nbytes": 16},
               {"kind": "scratch", "index": 0, "nbytes": 0}, {"kind": "scratch", "index": 0, "nbytes": 16}]
    empty = {"t": {"buf": 2, "offset": 0, "size": [0], "stride": [1], "dtype": "float32"}}
    entries = [{"aten": "aten.empty.memory_format", "args": [[4]], "kwargs": {}, "outs": [_view(1)]},
               {"aten": "aten.empty.memory_format", "args": [[0]], "kwargs": {}, "outs": [empty]},
               {"launch": "k", "grid": [1, 1, 1], "args": [_view(0), _view(1)], "options": {}},
               {"aten": "aten.cat.default", "args": [[_view(1), empty]], "kwargs": {}, "outs": [_view(3)]}]
    trace = Trace(buffers=buffers, entries=entries, outputs=[_view(3)])
    trace.validate()
    assert trace.torch_made_outputs() == []
    entries[0] = {"aten": "aten.zeros.default", "args": [[4]], "kwargs": {}, "outs": [_view(1)]}
    entries[2]["args"] = [_view(0), _view(0)]  # the kernel never handed the body: the cat copies torch's zeros
    assert Trace(buffers=buffers, entries=entries, outputs=[_view(3)]).torch_made_outputs() == ["aten.cat.default"]


def test_the_models_own_memory_passed_off_as_host_data_is_not_flagged(tmp_path):
    # Red-team v4k: `torch.as_tensor(self.ws.numpy())` hands lift_fresh the model's workspace; flagged, it
    # escaped RH-10 and the state carried across trials.
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.ws = torch.zeros(64)
                self.s = torch.ones(4)

            def forward(self, x):
                out = torch.as_tensor(self.ws.numpy())
                launch(x, self.s, out)
                return out
    """, "kg_v4k_numpy_ws")
    trace, _ = _record(module, torch.randn(64))
    (ref,) = [o["t"] for o in trace.outputs]
    assert trace.buffers[ref["buf"]]["kind"] == "state" and not trace.buffers[ref["buf"]].get("host")


def _two_recordings(module):
    """Two recorded calls of one model on inputs of the same shape and other values: (traces, recorders)."""
    model, recs, traces = module.ModelNew(), [], []
    for seed in (1, 2):
        x = torch.randn(64, generator=torch.Generator().manual_seed(seed))
        rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
        with torch.no_grad(), rec:
            out = model(x)
        traces.append(rec.finish(out))
        recs.append(rec)
    return traces, recs


def test_a_host_constant_built_from_input_values_differs_between_calls(tmp_path):
    traces, recs = _two_recordings(_load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                launch(x, torch.tensor(x.tolist()[:4], device=x.device), out)
                return out
    """, "kg_v4j_tolist"))
    assert recorder.first_difference(*traces) == ""  # same launches, same layouts ...
    assert "host data" in recorder.host_constants_differ(traces[0], *recs)  # ... other host-built values
    traces, recs = _two_recordings(_load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                out = torch.empty_like(x)
                launch(x, torch.tensor([0.5, -1.0, 2.0, 0.25], device=x.device), out)
                return out
    """, "kg_v4j_const"))
    assert recorder.host_constants_differ(traces[0], *recs) == ""  # an honest constant is the same in both

def test_memory_hidden_off_the_discovered_state_is_not_host_data(tmp_path):
    # Review of round v4k: state kept on a plain object is not discovered, and `.numpy()` (reached through a
    # match pattern past the scan) handed it to lift_fresh; a storage over memory it does not own is not
    # resizable, so the flag never goes to it.
    module = _load(tmp_path, """
        class Box:
            pass

        class ModelNew(nn.Module):
            def __init__(self):
                super().__init__()
                self.box = Box()
                self.box.ws = torch.zeros(64)
                self.s = torch.ones(4)

            def forward(self, x):
                out = torch.as_tensor(self.box.ws.numpy())
                launch(x, self.s, out)
                return out
    """, "kg_v4k_hidden_numpy")
    trace, _ = _record(module, torch.randn(64))
    (ref,) = [o["t"] for o in trace.outputs]
    assert not trace.buffers[ref["buf"]].get("host"), trace.buffers


def test_in_place_view_ops_are_metadata_not_compute(tmp_path):
    """`out.squeeze_(1)` / `unsqueeze_` / `t_` / `transpose_` change sizes and strides only (aten does not mark
    them `is_view`): they were torch compute (`cheat RH-01`) on an honest keepdim-shaped output (red-team s13).
    The replay reads the output with the metadata it ends with; a transposed result keeps transposed strides."""
    module = _load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                s = torch.ones(4, device=x.device)
                out = torch.empty(x.shape[0], 1, x.shape[1], device=x.device)
                launch(x, s, out)
                out.squeeze_(1)
                out.unsqueeze_(0).squeeze_(0)
                out.t_()
                out.transpose_(0, 1)
                return out
    """, "kg_rh_inplace_views")
    x = torch.randn(8, 8)
    trace, replay = _record(module, x)
    assert not trace.torch_compute
    assert trace.outputs[0]["t"]["size"] == [8, 8] and trace.outputs[0]["t"]["stride"] == [8, 1]
    y = torch.randn(8, 8)
    assert torch.equal(replay(y), y)
    module2 = _load(tmp_path, """
        class ModelNew(nn.Module):
            def forward(self, x):
                s = torch.ones(4, device=x.device)
                out = torch.empty_like(x)
                launch(x, s, out)
                return out.t_()
    """, "kg_rh_inplace_t")
    trace2, _ = _record(module2, x)
    assert not trace2.torch_compute and trace2.outputs[0]["t"]["stride"] == [1, 8]  # the layout rule sees it
