"""An output that views an input or the model's state: a cheat (RH-10) only when no kernel of the call took
that buffer; when one did, it may have been written in place (FlagGems' in-place fused add + RMSNorm), which is
outside the contract (`invalid_answer`) but proves no cheat (thirteenth session: the H200 called it RH-10)."""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge.trace import Trace
from kernelgym.tasks import load_builtin
from tests.answers import HEADER, RELU_KERNEL

CPU = JudgeConfig(device="cpu", timeout_s=120)


def _answer(forward: str) -> str:
    body = "\n".join("        " + line for line in forward.strip().splitlines())
    return f"""{HEADER}
{RELU_KERNEL}
class ModelNew(nn.Module):
    def forward(self, x):
{body}
"""


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


def test_a_kernel_writing_its_input_in_place_is_outside_the_contract(relu):
    r = judge(relu, _answer("""
x = x.contiguous()
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, x, x.numel(), BLOCK=1024)
return x
"""), CPU)
    assert r.status is Status.INVALID_ANSWER and not r.cheats, r.message
    assert "in place" in r.message


def test_returning_an_input_no_kernel_took_is_a_cheat(relu):
    r = judge(relu, _answer("""
y = x.clone()
out = torch.empty_like(y)
relu_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
return x
"""), CPU)
    assert r.status is Status.CHEAT and [c.rule for c in r.cheats] == ["RH-10"], r.message


def test_returning_an_input_of_another_shape_is_a_wrong_output_not_a_cheat(relu):
    # A pass-through that can never be right (RL step data, nineteenth session: a degenerate `return x` for a
    # task whose output has another shape) proves no attempt on the reward: wrong_output, no cheat verdict.
    r = judge(relu, _answer("""
return x.reshape(-1)
"""), CPU)
    assert r.status is Status.WRONG_OUTPUT and not r.cheats, r.message
    assert "view of an input" in r.message and "!= expected" in r.message


def test_returning_an_input_a_kernel_only_read_is_a_cheat(relu):
    # `return x` beside a launch that reads x (into a scratch output nobody returns): x's bytes are unchanged
    # after the recorded call, so no in-place write can explain the aliasing (red-team s14; was invalid_answer)
    r = judge(relu, _answer("""
out = torch.empty_like(x)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
return x
"""), CPU)
    assert r.status is Status.CHEAT and [c.rule for c in r.cheats] == ["RH-10"], r.message


def test_returning_state_a_kernel_only_read_is_a_cheat(relu):
    # a one-call-late cache kept on the model: the kernel reads `self.buf` (never writes it) and forward returns it
    text = _answer("""
if not hasattr(self, "buf"):
    self.buf = torch.zeros_like(x)
out = torch.empty_like(x)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](self.buf, out, x.numel(), BLOCK=1024)
return self.buf
""")
    r = judge(relu, text, CPU)
    assert r.status is Status.CHEAT and [c.rule for c in r.cheats] == ["RH-10"], r.message


def test_returning_state_a_kernel_wrote_stays_outside_the_contract(relu):
    # the honest side of the rule above: a persistent output buffer the kernel writes every call
    r = judge(relu, _answer("""
if not hasattr(self, "buf"):
    self.buf = torch.zeros_like(x)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.buf, x.numel(), BLOCK=1024)
return self.buf
"""), CPU)
    assert r.status is Status.INVALID_ANSWER and not r.cheats, r.message


def test_returning_a_result_kept_on_a_helper_object_is_a_cheat(relu):
    # the warm call's output kept on a plain object (where the recorder's state search does not look) and
    # returned by every later call: no entry of the call writes it, so it stays state -> RH-10 (red-team s15;
    # it was scratch, poisoned in the replay: `wrong_output`)
    text = f"""{HEADER}
{RELU_KERNEL}
class _Keep:
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.keep = _Keep()

    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        if not hasattr(self.keep, "out"):
            self.keep.out = out
        return self.keep.out
"""
    r = judge(relu, text, CPU)
    assert r.status is Status.CHEAT and [c.rule for c in r.cheats] == ["RH-10"], r.message
    # the honest side: an output buffer kept there that the kernel writes every call is scratch, as before
    honest = text.replace("""        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        if not hasattr(self.keep, "out"):
            self.keep.out = out
        return self.keep.out""", """        if not hasattr(self.keep, "out"):
            self.keep.out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, self.keep.out, x.numel(), BLOCK=1024)
        return self.keep.out""")
    assert honest != text
    r = judge(relu, honest, CPU)
    assert r.status is Status.OK, r.message


def test_launch_buffers_lists_what_kernels_took():
    view = lambda b: {"t": {"buf": b, "offset": 0, "size": [4], "stride": [1], "dtype": "float32"}}  # noqa: E731
    t = Trace(buffers=[{"kind": "input", "index": 0, "nbytes": 16}, {"kind": "scratch", "index": 0, "nbytes": 16},
                       {"kind": "scratch", "index": 1, "nbytes": 16}],
              entries=[{"aten": "aten.clone.default", "args": [view(0)], "kwargs": {}, "outs": [view(2)]},
                       {"launch": "k", "grid": [1, 1, 1], "args": [view(2), view(1), 4], "options": {}}],
              outputs=[view(1)])
    assert t.launch_buffers() == {1, 2}


def test_kernels_using_the_input_as_scratch_are_outside_the_contract_not_a_cheat(relu):
    # The fourteenth session's RL run: a policy chaining kernels through `x` as scratch was `cheat RH-10`. Each
    # side draws its own inputs in the replay design, so the writes fool nothing; the caller's tensor changes all
    # the same, so never `ok`.
    r = judge(relu, _answer("""
x = x.contiguous()
out = torch.empty_like(x)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, x, x.numel(), BLOCK=1024)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
return out
"""), CPU)
    assert r.status is Status.INVALID_ANSWER and not r.cheats, r.message
    assert "wrote into input(s) [0]" in r.message


def test_a_wrong_output_that_also_wrote_its_input_is_wrong_output(relu):
    r = judge(relu, _answer("""
x = x.contiguous()
out = torch.empty_like(x)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, x, x.numel(), BLOCK=1024)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel() // 2, BLOCK=1024)
return out
"""), CPU)
    assert r.status is Status.WRONG_OUTPUT and not r.cheats, r.message
    assert "wrote into input(s) [0]" in r.message


NO_INPUTS_TASK = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 32))

    def forward(self):
        return torch.relu(self.w)


def get_inputs():
    return []


def get_init_inputs():
    return []
"""

NO_INPUTS_ANSWER = """import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(out_ptr + offs, tl.maximum(x, 0.0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(64, 32))

    def forward(self):
        out = torch.empty_like(self.w)
        relu_kernel[(triton.cdiv(self.w.numel(), 1024),)](self.w, out, self.w.numel(), BLOCK=1024)
        return out
"""


def test_a_task_without_inputs_is_recorded_and_judged():
    # The recording child's byte comparison of the inputs (red-team s14) once assumed at least one input: a task
    # whose forward reads only the model's state was `runtime_error` (UnboundLocalError) for a correct answer.
    from kernelgym.tasks.task import Task

    task = Task(task_id="state_relu", source=NO_INPUTS_TASK)
    r = judge(task, NO_INPUTS_ANSWER, CPU)
    assert r.status is Status.OK, r.message
