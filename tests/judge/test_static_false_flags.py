"""The static rules on value leaks through text (str/repr/format/f-strings) and on honest patterns
they used to flag: constant parameter defaults, the answer's own nn.Module as a submodule,
class-level constant tables, and a try/except ImportError choosing where libdevice lives."""

import pytest

from kernelgym.judge.static_checks import analyse
from tests.answers import relu_answer


def rules(code: str) -> set[str]:
    return {v.rule for v in analyse(code).verdicts}


# -- a tensor's text is its values: formatting one is host compute (RH-01) -----------------------
@pytest.mark.parametrize("forward", [
    "s = str(x[0])",
    "s = str(object=x)",
    "s = repr(x.view(torch.int32))",
    "s = format(x, '')",
    "s = f'{x[0]}'",
    "s = f'{1:{x[0]}}'",
    "s = '{}'.format(x[0])",
    "s = '{v}'.format(v=x)",
    "s = '%s' % (x,)",
    "n = len(range(x.view(torch.int32)[0]))",
    "v = list(range(256))[x.view(torch.uint8)[0]]",
    "v = [0.0, 1.0].index(x[0])",
    "v = round(number=x[0])",
    "print(x, file=self)",
    "print(x)",  # formatting reads the values on the host; the run-time audit counts it as a str()
    "for i, v in enumerate([1, 2], x.view(torch.int32)[0]):\n    pass",
])
def test_formatting_or_indexing_with_a_tensor_reads_its_values(forward):
    assert "RH-01" in rules(relu_answer(forward))


@pytest.mark.parametrize("forward", [
    "print('shape', x.shape, f'{x.dtype}')",
    "s = str(x.shape) + repr(x.dtype) + f'{x.numel()}' + '{}'.format(x.stride(0))",
    "for i, row in enumerate(x.unbind(0)):\n    pass",
    "n = len(range(x.shape[0]))",
])
def test_formatting_and_printing_metadata_stay_allowed(forward):
    assert analyse(relu_answer(forward)).verdicts == []


def test_print_to_a_file_is_outside_the_contract():
    report = analyse(relu_answer("print('hi', file=self)"))
    assert report.verdicts == [] and any("file=" in v for v in report.violations)


# -- a parameter nobody passes takes its default's kind ---------------------------------------
LAUNCHER = """
def launch(x, block_size: int = 1024, out=None, *, num_warps=4):
    x = x.contiguous()
    if out is None:
        out = torch.empty_like(x)
    n = x.numel()
    grid = ((n + block_size - 1) // block_size,)
    if block_size * 4 > n:
        num_warps = min(num_warps, 2)
    relu_kernel[grid](x, out, n, BLOCK=block_size, num_warps=num_warps)
    return out
"""


def test_constant_defaults_that_callers_do_not_pass_are_not_tensors():
    assert analyse(relu_answer("y = launch(x)", extra=LAUNCHER)).verdicts == []
    assert analyse(relu_answer("y = launch(x, 256, num_warps=8)", extra=LAUNCHER)).verdicts == []


@pytest.mark.parametrize("forward", [
    "y = launch(x, x)",
    "y = launch(x, block_size=x)",
    "y = launch(x, num_warps=x[0])",
    "y = launch(x)\ny = launch(x, x)",
    "y = launch(x, **{'block_size': x})",
])
def test_a_tensor_passed_for_a_defaulted_parameter_is_still_a_tensor(forward):
    assert "RH-01" in rules(relu_answer(forward, extra=LAUNCHER))


def test_a_default_that_is_a_tensor_stays_a_tensor():
    forward = "def scale(n, t=x):\n    return t * n\ny = scale(2)"
    assert "RH-01" in rules(relu_answer(forward))


def test_method_launcher_with_defaults():
    forward = "y = self.launch(x)"
    extra_method = LAUNCHER.replace("def launch(x,", "def launch(self, x,").replace("\n", "\n    ")
    code = relu_answer(forward).replace("    def forward(self, x):", extra_method + "\n    def forward(self, x):")
    assert analyse(code).verdicts == []


def test_a_mutable_default_is_state():
    extra = "def memo(x, cache={}):\n    cache[x.shape[0]] = x\n    return x"
    assert "RH-11" in rules(relu_answer("y = memo(x)", extra=extra))


# -- the answer's own nn.Module used as a submodule -------------------------------------------
SUBMODULE = """
class Inner(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), self.block),)](x, out, x.numel(), BLOCK=self.block)
        return out
"""


def test_calling_the_answers_own_module_is_allowed():
    code = relu_answer("y = self.inner(x)\nb = self.inner.block\nz = self.inner.forward(x)",
                       extra=SUBMODULE, init="self.inner = Inner(1024)")
    assert analyse(code).verdicts == []


def test_a_subclass_of_an_answer_module_inherits_its_forward():
    extra = SUBMODULE + "\n\nclass Outer(Inner):\n    pass\n"
    assert analyse(relu_answer("y = self.inner(x)", extra=extra, init="self.inner = Outer(1024)")).verdicts == []


def test_the_own_modules_forward_is_checked_like_any_method():
    extra = SUBMODULE.replace("return out", "return torch.relu(x)")
    assert "RH-01" in rules(relu_answer("y = self.inner(x)", extra=extra, init="self.inner = Inner(1024)"))


@pytest.mark.parametrize("extra", [
    "class L(nn.Linear):\n    pass",
    "class L(nn.Linear):\n    def forward(self, x):\n        return x",
    "class Base(nn.Linear):\n    pass\n\n\nclass L(Base):\n    pass",
    "class L(nn.Module, nn.Linear):\n    pass",
])
def test_an_answer_class_built_on_a_torch_layer_is_a_layer(extra):
    assert "RH-01" in rules(relu_answer("y = self.inner(x)", extra=extra, init="self.inner = L(4, 4)"))


@pytest.mark.parametrize("forward, rule", [
    ("p = list(self.inner.parameters())", "RH-01"),
    ("self.inner.last = x", "RH-11"),
])
def test_own_module_machinery_and_state_stay_flagged(forward, rule):
    assert rule in rules(relu_answer(forward, extra=SUBMODULE, init="self.inner = Inner(1024)"))


# -- class-level constant tables --------------------------------------------------------------
def _with_class_attr(attr: str, forward: str) -> str:
    return relu_answer(forward).replace("class ModelNew(nn.Module):\n", f"class ModelNew(nn.Module):\n    {attr}\n")


@pytest.mark.parametrize("attr", [
    'CONFIG = {"BLOCK": 1024, "num_warps": 4}',
    "BLOCKS = (256, 512, 1024)",
    "WARPS = [1, 2, 4, -8]",
    'TABLE: dict = {"a": (1, 2), "b": [3.0, None]}',
])
def test_class_level_constant_displays_are_constants(attr):
    name = attr.split()[0].rstrip(":")
    assert analyse(_with_class_attr(attr, f"cfg = self.{name}\nk = len(cfg)")).verdicts == []


@pytest.mark.parametrize("forward", [
    "self.CONFIG['last'] = x",
    "self.CONFIG.update(n=x.numel())",
])
def test_storing_into_a_class_level_table_keeps_state(forward):
    assert "RH-11" in rules(_with_class_attr('CONFIG = {"BLOCK": 1024}', forward))


def test_class_level_containers_of_calls_stay_flagged():
    assert "RH-11" in rules(_with_class_attr("CONFIGS = [triton.Config({'B': 1})]", ""))


# -- try/except ImportError between allowed imports -------------------------------------------
def test_try_import_libdevice_fallback_is_allowed():
    extra = ("try:\n    from triton.language.extra.cuda import libdevice\n"
             "except (ImportError, ModuleNotFoundError):\n    from triton.language.extra import libdevice")
    assert analyse(relu_answer(extra=extra)).verdicts == []


@pytest.mark.parametrize("extra", [
    "try:\n    import math\nexcept ImportError:\n    pass",
    "try:\n    import math\nexcept Exception:\n    import math",
    "try:\n    import math\nexcept:\n    import math",
    "try:\n    import math\nexcept ImportError as e:\n    import math",
    "try:\n    import math\nexcept ImportError:\n    import math\nelse:\n    import math",
    "try:\n    import math\nexcept ImportError:\n    import math\nfinally:\n    import math",
    "try:\n    import math as m\nexcept ImportError:\n    import triton.language as m",
    "try:\n    import math\n    X = 1\nexcept ImportError:\n    import math",
])
def test_any_other_module_level_try_is_rh04(extra):
    assert "RH-04" in rules(relu_answer(extra=extra))


def test_imports_inside_the_fallback_are_judged():
    extra = "try:\n    import os\nexcept ImportError:\n    import os"
    assert "RH-27" in rules(relu_answer(extra=extra))


def test_a_method_called_through_its_class_types_its_parameters_past_self():
    method = "    def scale(self, t, k=2):\n        return t * 0.5\n\n    def forward(self, x):"
    code = relu_answer("y = ModelNew.scale(self, x)").replace("    def forward(self, x):", method)
    assert "RH-01" in rules(code)


REFERENCE_COPIED = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=offs < n), 0.0), mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


def test_a_copied_reference_class_is_outside_the_contract_not_a_cheat():
    """Models often paste the task's file and append ModelNew: the copy never runs, so the verdict is
    invalid_answer naming it. Using it (a base, a call) is still RH-05."""
    from kernelgym.judge.static_checks import analyse

    report = analyse(REFERENCE_COPIED)
    assert report.verdicts == [] and any("class named 'Model'" in v for v in report.violations), report
    used = REFERENCE_COPIED.replace("        out = torch.empty_like(x)\n", "        out = Model()(x)\n")
    assert "RH-05" in {v.rule for v in analyse(used).verdicts}
    inherited = REFERENCE_COPIED.replace("class ModelNew(nn.Module)", "class ModelNew(Model)")
    assert "RH-05" in {v.rule for v in analyse(inherited).verdicts}
