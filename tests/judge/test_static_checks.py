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
        ("from torch.utils.cpp_extension import load_inline", "RH-06"),
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


MATMUL_HELPER = "class Product(nn.Module):\n    def __init__(self, a):\n        super().__init__()\n        self.v = torch.mm(a, a)"


@pytest.mark.parametrize(
    "forward, init, extra",
    [
        ("y = torch.linalg.matmul(x, x)", "", ""),
        ("y = torch.fft.rfft(x)", "", ""),
        ("y = torch.special.expit(x)", "", ""),
        ("y = torch.nn.functional.relu(x)", "", ""),
        ("y = la.matmul(x, x)", "", "la = torch.linalg"),
        ("y = torch.Tensor.matmul(x, x)", "", ""),
        ("y = torch.Tensor.__matmul__(x, x)", "", ""),
        ("y = x.__matmul__(x)", "", ""),
        ("y = x.__radd__(x)", "", ""),
        ("y = getattr(torch, 'matmul')(x, x)", "", ""),
        ("y = _mm(x, x)", "", "_mm = torch.matmul"),
        ("y = self.op(x, x)", "self.op = torch.matmul", ""),
        ("y = self.impl(x)", "self.impl = lambda a: torch.mm(a, a)", ""),
        ("y = self.f(x)", "def f(a):\n    return torch.mm(a, a)\nself.f = f", ""),
        ("y = _f(x)", "", "_f = lambda a: torch.mm(a, a)"),
        ("y = Product(x).v", "", MATMUL_HELPER),
        ("y = self.make(x).v", "self.make = Product", MATMUL_HELPER),
        ("y = Plain(x).v", "", "class Plain:\n    def __init__(self, a):\n        self.v = torch.mm(a, a)"),
        ("self.__init__()", "", ""),
    ],
)
def test_torch_compute_reached_any_way_is_rh01(forward, init, extra):
    assert "RH-01" in rules(relu_answer(forward, extra=extra, init=init))


def test_helper_class_verdict_names_its_init():
    (v,) = analyse(relu_answer("y = Product(x).v", extra=MATMUL_HELPER)).verdicts
    assert v.rule == "RH-01" and "Product.__init__" in v.reason


@pytest.mark.parametrize(
    "forward, init, extra",
    [
        ("assert isinstance(x, torch.Tensor) and x.dtype == torch.float32", "", ""),
        ("y = torch.empty(x.shape, dtype=torch.float16, device=torch.device('cpu'))", "", ""),
        ("y = x.contiguous(memory_format=torch.contiguous_format)\nv = torch.version.cuda\nd = torch.float8_e4m3fn", "", ""),
        ("grid = lambda meta: (triton.cdiv(x.numel(), meta['BLOCK']),)", "", ""),
        ("", "self.w = nn.Parameter(torch.randn(4, 4) * 0.02)\nnn.init.kaiming_uniform_(self.w)", ""),
        ("w = self.block.w", "self.block = Block(4)\nassert isinstance(self.block, Block)",
         "class Block(nn.Module):\n    def __init__(self, n):\n        super(Block, self).__init__()\n"
         "        self.w = nn.Parameter(torch.randn(n, n).abs())"),
        ("", "", "DTYPE = torch.float32\n\n@torch.no_grad()\ndef alloc(a):\n    return torch.empty_like(a)"),
    ],
)
def test_allocation_types_and_weight_setup_are_not_compute(forward, init, extra):
    assert analyse(relu_answer(forward, extra=extra, init=init)).verdicts == []


@pytest.mark.parametrize(
    "forward, extra",
    [
        ("", "class Quiet:\n    def __enter__(self):\n        return self\n\n    def __exit__(self, *exc):\n        return True"),
        ("with contextlib.suppress(Exception):\n    pass", "import contextlib"),
        ("Quiet = type('Quiet', (), {'__exit__': lambda *a: True})", ""),
    ],
)
def test_exception_swallowing_context_managers_are_rh04(forward, extra):
    assert "RH-04" in rules(relu_answer(forward, extra=extra))


@pytest.mark.parametrize(
    "forward, init, extra",
    [
        ("self.cache[id(x)] = x", "self.cache = {}", ""),
        ("self.cache.update({x.data_ptr(): x})", "self.cache = {}", ""),
        ("self.cache.setdefault(1, x)", "self.cache = {}", ""),
        ("self.cache.__setitem__(1, x)", "self.cache = {}", ""),
        ("self.bank.append(x)", "self.bank = []", ""),
        ("self.seen.add(x.data_ptr())", "self.seen = set()", ""),
        ("c = self.cache\nc[1] = x", "self.cache = {}", ""),
        ("", "", "def memo(t):\n    memo.store[1] = t\n\nmemo.store = dict.fromkeys(())"),
        ("ModelNew.forward.last = x", "", ""),
    ],
)
def test_state_kept_across_calls_is_rh11(forward, init, extra):
    assert "RH-11" in rules(relu_answer(forward, extra=extra, init=init))


@pytest.mark.parametrize("forward", ["self.calls[0] += 1", "self.calls[0] = self.calls[0] + 1"])
def test_call_counters_are_phase_detection(forward):
    assert rules(relu_answer(forward, init="self.calls = [0]")) == {"RH-21"}


def test_reading_config_containers_and_set_up_flags_are_not_state():
    forward = "b = self.cfg['BLOCK']\nfor d in self.dims:\n    pass\nif not self.ready[0]:\n    self.ready[0] = True"
    init = "self.cfg = {'BLOCK': 128}\nself.dims = [0, 1]\nself.ready = [False]"
    assert analyse(relu_answer(forward, init=init)).verdicts == []


def test_stdlib_reexported_by_torch_is_not_called_compute():
    assert "RH-01" not in rules(relu_answer("p = torch.os.getpid()"))


def test_partial_replacement_allows_every_spelling_of_torch_compute():
    forward = "y = x.__matmul__(x)\nz = _mm(x, x)\nv = torch.linalg.matmul(x, x)\nw = x.clamp_min(0) * 2"
    assert analyse(relu_answer(forward, extra="_mm = torch.matmul"), allow_torch_compute=True).verdicts == []
