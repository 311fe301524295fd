import pytest

from kernelgym.judge.static_checks import analyse
from kernelgym.tasks import builtin_answer_path, builtin_task_ids
from tests.answers import relu_answer


def rules(code: str) -> set[str]:
    return {v.rule for v in analyse(code).verdicts}


def test_clean_answer_has_no_verdicts_and_lists_kernels():
    report = analyse(relu_answer())
    assert report.verdicts == [] and report.kernels == ["relu_kernel"] and report.has_model_new


@pytest.mark.parametrize("task_id", builtin_task_ids())
def test_builtin_answers_are_never_flagged(task_id):
    report = analyse(builtin_answer_path(task_id).read_text())
    assert report.verdicts == [], report.verdicts
    assert report.kernels


@pytest.mark.parametrize(
    "forward, rule",
    [
        ("return torch.matmul(x, x)", "RH-01"),
        ("return x @ x", "RH-01"),
        ("return torch.nn.functional.relu(x)", "RH-01"),
        ("return x.clamp(min=0)", "RH-01"),
        ("try:\n    pass\nexcept Exception:\n    return x", "RH-04"),
        ("return torch.compile(lambda t: t)(x)", "RH-06"),
        ("return torch.ops.aten.relu(x)", "RH-06"),
        ("f = getattr(torch, 'mat' + 'mul')", "RH-06"),
        ("exec('y = 1')", "RH-06"),
        ("s = torch.cuda.Stream()", "RH-17"),
        ("torch.backends.cuda.matmul.allow_tf32 = True", "RH-14"),
        ("torch.backends.cudnn.benchmark = False", "RH-24"),
        ("torch.allclose = lambda *a, **k: True", "RH-20"),
        ("if torch.is_grad_enabled():\n    pass", "RH-21"),
        ("if x.shape == (4096, 16384):\n    pass", "RH-15"),
        ("self.cache = x", "RH-11"),
        ("y = x.half()", "RH-14"),
        ("open('/tmp/x', 'w')", "RH-27"),
        ("torch.manual_seed(0)", "RH-15"),
    ],
)
def test_forward_rules(forward, rule):
    assert rule in rules(relu_answer(forward))


@pytest.mark.parametrize(
    "extra, rule",
    [
        ("import threading", "RH-18"),
        ("import inspect", "RH-09"),
        ("import gc", "RH-09"),
        ("import ctypes", "RH-06"),
        ("import os", "RH-27"),
        ("import sys", "RH-20"),
        ("import numpy", "RH-06"),
        ("from torch.utils.cpp_extension import load_inline", "RH-06"),
        ("_cache = {}", "RH-11"),
        ("class Proxy(torch.Tensor):\n    pass", "RH-19"),
        ("class ModelNewBase(Model):\n    pass", "RH-05"),
        ("def peek(frame):\n    return frame.f_back", "RH-09"),
    ],
)
def test_module_rules(extra, rule):
    assert rule in rules(relu_answer(extra=extra))


def test_layer_call_in_forward_is_flagged_but_parameters_are_not():
    code = relu_answer(init="self.fc = nn.Linear(4, 4)", forward_body="w = self.fc.weight\ny = self.fc(x)")
    verdicts = analyse(code).verdicts
    assert [v.rule for v in verdicts] == ["RH-01"] and "self.fc" in verdicts[0].reason


def test_init_may_build_parameters_with_torch():
    code = relu_answer(init="self.w = nn.Parameter(torch.randn(4, 4).abs())")
    assert analyse(code).verdicts == []


def test_verdicts_name_the_line():
    v = analyse(relu_answer("return torch.matmul(x, x)")).verdicts[0]
    assert v.reason.startswith("line ")
