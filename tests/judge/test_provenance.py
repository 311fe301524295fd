"""Output provenance (RH-02) and aliasing (RH-10), decided in the parent from output copies taken
while kernel and input memory carry marks. Replaces the ghost replay, which re-ran forward with
the kernels off: a sentinel kernel could sense that run, and allocator reuse made it flaky."""

import torch

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.provenance import classify, marked_copies
from kernelgym.judge.result import Status
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin

# Static rules off: these answers exercise the run-time mechanism alone (the static contract
# rejects several of them already, which would hide what the run-time check does).
DYNAMIC = JudgeConfig(engine="inprocess", device="cpu", seed=0, static_checks=False)


def _storages(*tensors):
    return [t.untyped_storage() for t in tensors]


def test_outputs_in_kernel_memory_pass_and_everything_is_restored():
    buf = torch.randn(6, 8)
    out = buf[:, :4]  # a view of a kernel-written buffer
    x = torch.randn(6, 8)
    before_buf, before_x = buf.clone(), x.clone()
    (copy,) = marked_copies([out], _storages(buf, x), [x])
    assert classify(out, copy) == (0, 0)
    assert torch.equal(buf, before_buf) and torch.equal(x, before_x)  # exact restore, no snapshot


def test_output_outside_kernel_memory_is_unmarked_whatever_its_dtype():
    for out in (torch.arange(10, dtype=torch.int64), torch.ones(7, dtype=torch.bool), torch.full((3,), float("nan"))):
        (copy,) = marked_copies([out], _storages(torch.empty(4)), [torch.empty(4)])
        assert classify(out, copy) == (out.numel(), 0), out.dtype


def test_output_that_is_input_memory_is_aliasing_even_when_a_kernel_saw_the_input():
    x = torch.randn(5, 5)
    out = x.t()
    (copy,) = marked_copies([out], _storages(x), [x])
    assert classify(out, copy)[1] == 25
    (copy,) = marked_copies([x[1]], [], [x])
    assert classify(x[1], copy) == (0, 5)


def test_a_tampered_copy_is_not_read_as_a_verdict():
    out = torch.randn(4)
    assert classify(out, torch.zeros(3, dtype=torch.uint8)) is None
    assert classify(out, "forged") is None


# An honest matvec writing into a ring of 5 preallocated outputs: the ghost replay saw whatever an
# earlier call left in the buffer and flagged it RH-02 at random. Provenance only asks whether a
# kernel was handed the output's memory, which it was on every call.
RING = '''
_RING, _CALLS = {}, [0]


def _ring_empty(shape, device, dtype):
    slot = _CALLS[0] % 5
    _CALLS[0] += 1
    key = (slot, tuple(shape))
    if key not in _RING:
        _RING[key] = torch.empty(shape, device=device, dtype=dtype)
    return _RING[key]
'''


def test_an_answer_reusing_output_buffers_is_not_a_decoy():
    answer = builtin_answer_path("matvec").read_text()
    old = "out = torch.empty((M, 1), device=a.device, dtype=a.dtype)"
    assert old in answer
    answer = answer.replace(old, "out = _ring_empty((M, 1), a.device, a.dtype)") + RING
    for seed in (0, 1):
        r = judge(load_builtin("matvec")[0], answer, JudgeConfig(engine="inprocess", device="cpu", seed=seed, static_checks=False))
        assert r.status is Status.OK, f"{r.status.value}: {r.message}"


# The kernel runs on every call (launch counts look honest) but on a scratch buffer; the output
# comes from torch. A sentinel made the kernel's own behaviour tell a ghost replay from a real
# call; nothing of the provenance check runs before forward returns, so there is nothing to sense.
SENTINEL_DECOY = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        probe = torch.full((4,), -1.0)
        sink = torch.empty(4)
        relu_kernel[(1,)](probe, sink, 4, BLOCK=4)
        if bool((sink == 0).all()):  # the kernel really ran: not a replay with kernels off
            return torch.relu(x)
        return torch.zeros_like(x)
'''


def test_a_kernel_that_senses_the_replay_is_caught_by_provenance():
    r = judge(load_builtin("relu")[0], SENTINEL_DECOY, DYNAMIC)
    assert r.status is Status.CHEAT and "RH-02" in {c.rule for c in r.cheats}, r.message
    assert any("not produced by the answer's kernels" in c.reason for c in r.cheats if c.rule == "RH-02")


def test_returning_the_input_is_aliasing_from_parent_data():
    answer = builtin_answer_path("relu").read_text().replace("        return relu(x)", "        relu(x)\n        return x")
    r = judge(load_builtin("relu")[0], answer, DYNAMIC)
    assert r.status is Status.CHEAT and "RH-10" in {c.rule for c in r.cheats}, r.message


def test_a_kernel_writing_into_its_input_is_mutation_from_parent_data():
    answer = builtin_answer_path("relu").read_text().replace(
        "relu_kernel[grid](x, out, n, BLOCK_SIZE=1024)", "relu_kernel[grid](x, out, n, BLOCK_SIZE=1024)\n"
        "    relu_kernel[grid](x, x, n, BLOCK_SIZE=1024)")
    r = judge(load_builtin("relu")[0], answer, DYNAMIC)
    assert r.status is Status.CHEAT, r.message
    assert any(c.rule == "RH-10" and "modified its input" in c.reason for c in r.cheats), r.cheats
