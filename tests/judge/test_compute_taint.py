"""Torch compute outside the kernels is called a cheat (RH-01) only where it can reach a kernel or an output.

Liger-Kernel's cross-entropy asserts on the target's range with torch (`(target * mask).max() < V`): on the H200
the judge called it `cheat RH-01` although the result never leaves the host (thirteenth session). What the
trace cannot tie to the work is `invalid_answer` (outside the contract, no penalty); what it can stays a cheat.
"""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge.trace import Trace
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer


def _view(buf):
    return {"t": {"buf": buf, "offset": 0, "size": [8], "stride": [1], "dtype": "float32"}}


def _trace(entries, outputs=None, compute=("aten.mul.Tensor",)):
    buffers = [{"kind": "input", "index": 0, "nbytes": 32}] + [{"kind": "scratch", "index": i, "nbytes": 32}
                                                               for i in range(4)]
    return Trace(buffers=buffers, entries=entries, outputs=outputs if outputs is not None else [_view(1)],
                 torch_compute=list(compute))


def _launch(*bufs):
    return {"launch": "k", "grid": [1, 1, 1], "args": [_view(b) for b in bufs] + [8, 64], "options": {}}


def _aten(op, args, outs):
    return {"aten": op, "args": [_view(b) for b in args], "kwargs": {}, "outs": [_view(b) for b in outs]}


def test_compute_read_only_by_the_host_reaches_nothing():
    t = _trace([_aten("aten.mul.Tensor", [0], [2]), _aten("aten.max.default", [2], [3]), _launch(0, 1)],
               compute=("aten.mul.Tensor", "aten.max.default"))
    assert not t.compute_reaches_work()


def test_compute_into_a_kernels_argument_is_reached():
    t = _trace([_aten("aten.mul.Tensor", [0], [2]), _launch(2, 1)])
    assert t.compute_reaches_work()


def test_compute_reaches_through_copies_and_in_place_writes():
    via_copy = _trace([_aten("aten.mul.Tensor", [0], [2]), _aten("aten.copy_.default", [3, 2], [3]), _launch(3, 1)])
    in_place = _trace([_aten("aten.mul.Tensor", [0, 0], [0]), _launch(0, 1)])  # x.mul_(x): the input itself
    assert via_copy.compute_reaches_work() and in_place.compute_reaches_work()


def test_compute_returned_as_the_output_is_reached():
    t = _trace([_launch(0, 1), _aten("aten.mul.Tensor", [1], [2])], outputs=[_view(2)])
    assert t.compute_reaches_work()


def test_inside_a_tensor_descriptor_too():
    desc = {"desc": [_view(2), [8], "zero", False]}
    t = _trace([_aten("aten.mul.Tensor", [0], [2]), {"launch": "k", "grid": [1, 1, 1], "args": [desc, _view(1)],
                                                     "options": {}}])
    assert t.compute_reaches_work()


def test_compute_left_in_state_reaches_the_next_calls_kernel():
    # `copy_kernel(self.cache, out)` then `self.cache.copy_(torch.relu(x))`: a one-call-late cache (red-team s14)
    buffers = [{"kind": "input", "index": 0, "nbytes": 32}, {"kind": "state", "index": 0, "nbytes": 32},
               {"kind": "scratch", "index": 0, "nbytes": 32}, {"kind": "scratch", "index": 1, "nbytes": 32}]
    entries = [_launch(1, 2), _aten("aten.relu.default", [0], [3]), _aten("aten.copy_.default", [1, 3], [1])]
    t = Trace(buffers=buffers, entries=entries, outputs=[_view(2)], torch_compute=["aten.relu.default"])
    assert t.compute_reaches_work()
    host = [dict(b, host=True) if b["kind"] == "state" else b for b in buffers]  # rebuilt by every call
    assert not Trace(buffers=host, entries=entries, outputs=[_view(2)],
                     torch_compute=["aten.relu.default"]).compute_reaches_work()
    unused = [_launch(0, 2), _aten("aten.relu.default", [0], [3]), _aten("aten.copy_.default", [1, 3], [1])]
    assert not Trace(buffers=buffers, entries=unused, outputs=[_view(2)],  # state no launch or output reads
                     torch_compute=["aten.relu.default"]).compute_reaches_work()


def test_taint_follows_through_entries_the_trace_cannot_express():
    # `c = x.to(torch.complex128)`; `(c * 0.5 + c.abs() * 0.5).real.float()` to a copy kernel (red-team s14):
    # `within_limits` cut the complex entries, and with them the taint ("for the host only", invalid_answer)
    def cview(buf, dtype="complex128", stride=1):
        return {"t": {"buf": buf, "offset": 0, "size": [8], "stride": [stride], "dtype": dtype}}
    buffers = [{"kind": "input", "index": 0, "nbytes": 32}] + [{"kind": "scratch", "index": 0, "nbytes": 128}
                                                               for _ in range(3)] + \
              [{"kind": "scratch", "index": 0, "nbytes": 32} for _ in range(2)]
    entries = [{"aten": "aten._to_copy.default", "args": [_view(0)], "kwargs": {}, "outs": [cview(1)]},
               {"aten": "aten.abs.default", "args": [cview(1)], "kwargs": {}, "outs": [cview(2)]},
               {"aten": "aten._to_copy.default", "args": [cview(2, "float64", 2)], "kwargs": {}, "outs": [_view(4)]},
               _launch(4, 5)]
    t = Trace(buffers=buffers, entries=entries, outputs=[_view(5)],
              torch_compute=["aten.abs.default"]).within_limits()
    assert t.unreplayable and t.compute_reaches_work()
    t.validate()  # the stubs are well-formed trace entries


def test_recorder_keeps_taint_through_an_argument_it_cannot_record():
    import torch

    from kernelgym.judge import recorder

    recorder.install()
    x = torch.randn(8)
    gen = torch.Generator().manual_seed(0)
    rec = recorder.Recorder([x], {})
    with torch.no_grad(), rec:
        r = torch.normal(x, 1e-30, generator=gen).to(torch.float64)  # a Generator has no trace form
    t = Trace.from_wire(rec.finish(r).to_wire())
    assert t.unreplayable and [b["kind"] for b in t.buffers] == ["input", "scratch", "scratch"]
    assert t.compute_reaches_work()


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


CPU = JudgeConfig(device="cpu", timeout_s=120)


def test_a_host_only_check_is_outside_the_contract_not_a_cheat(relu):
    r = judge(relu, relu_answer("assert (x * 0).abs().max() < 1e30, 'inputs out of range'"), CPU)
    assert r.status is Status.INVALID_ANSWER and not r.cheats, r.message
    assert "for the host only" in r.message


def test_compute_that_feeds_the_kernel_is_still_a_cheat(relu):
    r = judge(relu, relu_answer("x = x * 1.0"), CPU)
    assert r.status is Status.CHEAT and [c.rule for c in r.cheats] == ["RH-01"], r.message


def test_compute_on_constants_only_is_no_proven_cheat():
    # `torch.triu(torch.full((S, S), -inf), 1)` handed to an attention kernel: the same table kept on the model
    # is state and passes, so computing it on every call proves nothing (red-team s15)
    buffers = [{"kind": "input", "index": 0, "nbytes": 32}, {"kind": "state", "index": 0, "nbytes": 32}] + \
              [{"kind": "scratch", "index": 0, "nbytes": 32} for _ in range(4)]
    full = {"aten": "aten.full.default", "args": [[8], float("-inf")], "kwargs": {}, "outs": [_view(2)]}
    mask = [full, _aten("aten.triu.default", [2], [3]), _launch(0, 3, 4)]
    t = Trace(buffers=buffers, entries=mask, outputs=[_view(4)], torch_compute=["aten.triu.default"])
    assert t.compute_reaches_work() and t.compute_from_constants()
    params = [_aten("aten.rsqrt.default", [1], [3]), _launch(0, 3, 4)]  # parameters no entry writes
    assert Trace(buffers=buffers, entries=params, outputs=[_view(4)],
                 torch_compute=["aten.rsqrt.default"]).compute_from_constants()
    # never: the inputs, what a kernel was handed (also state), host-built tensors, state the call writes
    on_input = [_aten("aten.triu.default", [0], [3]), _launch(3, 4)]
    after_kernel = [full, _launch(0, 2), _aten("aten.triu.default", [2], [3]), _launch(3, 4)]
    handed_state = [_launch(0, 1), _aten("aten.rsqrt.default", [1], [3]), _launch(3, 4)]
    state_written = [_aten("aten.copy_.default", [1, 0], [1]), _aten("aten.rsqrt.default", [1], [3]), _launch(3, 4)]
    for entries in (on_input, after_kernel, handed_state, state_written):
        compute = [e["aten"] for e in entries if e.get("aten", "").startswith(("aten.triu", "aten.rsqrt"))]
        assert not Trace(buffers=buffers, entries=entries, outputs=[_view(4)],
                         torch_compute=compute).compute_from_constants(), entries
    host = [dict(b, host=True) if b["kind"] == "state" else b for b in buffers]
    assert not Trace(buffers=host, entries=params, outputs=[_view(4)],
                     torch_compute=["aten.rsqrt.default"]).compute_from_constants()
    # a compute operator the trace names but holds no entry of: unknown, not constant
    assert not Trace(buffers=buffers, entries=mask, outputs=[_view(4)],
                     torch_compute=["aten.triu.default", "aten.mul.Tensor"]).compute_from_constants()


def test_a_mask_built_by_torch_on_every_call_is_outside_the_contract_not_a_cheat(relu):
    r = judge(relu, relu_answer("x = x + torch.zeros_like(x).triu() * 0"), CPU)  # input-derived: still a cheat
    assert r.status is Status.CHEAT, r.message
    r = judge(relu, relu_answer("_unused = torch.full_like(x, 2.0).triu() + 1.0\n"
                                "x = torch.cat([x.reshape(-1), _unused.reshape(-1)[:0]]).view_as(x)"), CPU)
    assert r.status is Status.INVALID_ANSWER and not r.cheats, r.message
    assert "constants" in r.message
