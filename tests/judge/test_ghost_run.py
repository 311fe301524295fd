"""The ghost run (each trial replayed once more with every kernel launch skipped) proves RH-02 only when
the outputs are right without the kernels on every trial (red-team round v4d): a one-ulp nudge by a kernel
no longer hides torch-made outputs, and honest answers whose kernels change nothing on one trial (an
identity-like draw) or buggy answers that write nothing are not called cheats."""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge.replay_judge import _REPLY_KINDS, _Stop, _check_error, _layers
from kernelgym.judge.result import EvalResult
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer

CPU = JudgeConfig(device="cpu", timeout_s=120)


def test_a_kernel_that_stores_nothing_is_wrong_not_a_cheat():
    answer = relu_answer().replace(
        "tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)",
        "v = tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)")
    assert "tl.store" not in answer
    r = judge(load_builtin("relu")[0], answer, CPU)
    assert r.status is Status.WRONG_OUTPUT and not r.cheats, (r.status, r.message)


def test_torch_made_outputs_are_rh02_even_when_a_kernel_touches_them():
    # torch makes the output; the kernel adds zero to it (changes no bit): right on every trial without it
    answer = relu_answer(
        "out = torch.relu(x)\nrelu_kernel[(triton.cdiv(out.numel(), 1024),)](out, out, out.numel(), BLOCK=1024)\n"
        "return out")
    r = judge(load_builtin("relu")[0], answer, JudgeConfig(device="cpu", timeout_s=120, static_checks=False))
    assert r.status in (Status.CHEAT, Status.INVALID_ANSWER), (r.status, r.message)


@pytest.mark.parametrize("kind", ["system_error", "ok", "cheat", "wrong_output", "no_such_status", None])
def test_an_error_reply_cannot_choose_a_verdict_the_parent_decides(kind):
    r = EvalResult(status=Status.OK, task_id="relu")
    with pytest.raises(_Stop):
        _check_error({"error": "Traceback ...\nRuntimeError: boom", "kind": kind}, r, "forward: ")
    assert r.status in _REPLY_KINDS and r.status is Status.RUNTIME_ERROR
    r = EvalResult(status=Status.OK, task_id="relu")
    with pytest.raises(_Stop):
        _check_error({"error": "x", "kind": "oom"}, r, "")
    assert r.status is Status.OOM


@pytest.mark.parametrize("conf", [["x"], {"layers": 5}, {"layers": [1, "seccomp"]}, None, "x"])
def test_a_malformed_confinement_report_is_read_as_strings_or_nothing(conf):
    layers = _layers({"confinement": conf})
    assert all(isinstance(x, str) for x in layers)
    assert layers == (["1", "seccomp"] if isinstance(conf, dict) and isinstance(conf["layers"], list) else [])
