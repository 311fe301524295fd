"""Static typing gaps found by the second red-team round: values that hid a tensor from the kind
rules (a local container, a heuristic's argument dict, tl.constexpr, a tensor passed as `self`, an
own submodule's __init__ argument, state holding a tensor, an import fallback swapping modules, a
method overriding its base's), and the honest patterns next to each that must stay allowed."""

import pytest

from kernelgym.judge.static_checks import analyse
from tests.answers import HEADER, RELU_KERNEL, relu_answer


def rules(code: str) -> set[str]:
    return {v.rule for v in analyse(code).verdicts}


def _with_method(code: str, method: str) -> str:
    return code.replace("    def forward(self, x):", method + "\n\n    def forward(self, x):")


# -- 1. a local container holds what is stored into it ------------------------------------------
@pytest.mark.parametrize("forward", [
    "box = [0]\nbox[0] = x\ns = str(box[0][0])",
    "box = {}\nbox['k'] = x[0]\ns = repr(box['k'])",
    "box = [[0]]\nbox[0][0] = x\ny = box[0]\ns = f'{y[0]}'",
])
def test_a_tensor_stored_into_a_local_container_stays_a_tensor(forward):
    assert "RH-01" in rules(relu_answer(forward))


@pytest.mark.parametrize("forward", [
    "shape = [0, 0]\nshape[0] = x.shape[0]\ns = str(shape)",
    "outs = [None, None]\nouts[0] = torch.empty_like(x)\nn = outs[0].numel()",
    "meta = {}\nmeta['n'] = x.numel()\ns = '{}'.format(meta['n'])",
])
def test_local_containers_of_sizes_or_buffers_stay_allowed(forward):
    assert analyse(relu_answer(forward)).verdicts == []


# -- 2. grids, heuristics and autotune hooks see what the launches pass -----------------------
def _heuristic(value: str, kernel_params: str = "x_ptr, out_ptr, n, BLOCK: tl.constexpr, V: tl.constexpr") -> str:
    kernel = f"""
@triton.heuristics({{"V": {value}}})
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr, V: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * V, mask=offs < n)
"""
    return relu_answer("k[(1,)](x, x, x.numel(), BLOCK=16)", extra=kernel)


@pytest.mark.parametrize("value", [
    "lambda a: float(str(a['x_ptr'][0]))",
    "lambda a: tuple(float(v) for v in a['x_ptr'])",
    "lambda a: len(str(a))",
    "lambda a: float(a[next_key])".replace("next_key", "'x' + 'ptr'"),
])
def test_a_heuristic_reading_a_launched_tensor_is_host_compute(value):
    assert "RH-01" in rules(_heuristic(value))


@pytest.mark.parametrize("value", [
    "lambda a: 4096 // a['x_ptr'].element_size()",
    "lambda a: a['x_ptr'].dtype == torch.float16",
    "lambda a: a['n'] % a['BLOCK'] == 0",
    "lambda a: a.get('n') > 1024",
    "lambda a: a['x_ptr'].stride(0) * a['x_ptr'].shape[0]",
])
def test_a_heuristic_reading_sizes_and_metadata_is_allowed(value):
    assert analyse(_heuristic(value)).verdicts == []


PRUNED = """
def prune(configs, named_args, **kwargs):
    n = named_args["n"]
    return [c for c in configs if c.kwargs["BLOCK"] <= max(n, 256) and BODY]


@triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"],
                 prune_configs_by={"early_config_prune": prune})
@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def _pruned(body: str) -> str:
    return relu_answer("k[lambda m: (triton.cdiv(x.numel(), m['BLOCK']),)](x, x, x.numel())",
                       extra=PRUNED.replace("BODY", body))


def test_a_named_pruning_function_sees_sizes_as_sizes():
    assert analyse(_pruned("named_args['x_ptr'].element_size() == 4")).verdicts == []


def test_a_named_pruning_function_reading_a_tensor_is_host_compute():
    assert "RH-01" in rules(_pruned("float(str(named_args['x_ptr'][0])) > 0"))


# -- 3. tl.constexpr outside kernels carries its argument -----------------------------------
def test_tl_constexpr_of_a_tensor_outside_a_kernel_is_host_compute():
    assert "RH-01" in rules(relu_answer("s = str(tl.constexpr(x[0]))"))
    assert "RH-01" in rules(relu_answer("c = tl.constexpr(x)"))


def test_tl_constexpr_of_a_setting_is_allowed():
    assert analyse(relu_answer("c = tl.constexpr(x.shape[0])\ns = str(c)")).verdicts == []


# -- 4. a method called through its class takes `self` only from a module ---------------------
def test_a_tensor_passed_as_self_is_host_compute():
    method = "    def values(self, k):\n        return str(self)"
    assert "RH-01" in rules(_with_method(relu_answer("v = ModelNew.values(x[0], 1.0)"), method))


def test_self_passed_through_the_class_is_allowed():
    method = "    def values(self, k):\n        return k * 2"
    assert analyse(_with_method(relu_answer("v = ModelNew.values(self, 1.0)"), method)).verdicts == []


# -- 5. an own submodule's __init__ takes what the answer passes ----------------------------
HOLDER = """
class Holder(nn.Module):
    def __init__(self, buf):
        super().__init__()
        self.buf = buf

    def forward(self, out):
        return READ
"""


def test_a_tensor_passed_to_an_own_submodule_stays_a_tensor():
    code = relu_answer("y = self.h(x)", extra=HOLDER.replace("READ", "str(self.buf[0])"),
                       init="self.h = Holder(torch.empty(8))")
    assert "RH-01" in rules(code)


def test_a_setting_passed_to_an_own_submodule_stays_a_setting():
    code = relu_answer("y = self.h(x)", extra=HOLDER.replace("READ", "str(self.buf) + str(self.buf * 2)"),
                       init="self.h = Holder(1024)")
    assert analyse(code).verdicts == []


# -- 6. state that holds a tensor ---------------------------------------------------------
def _table(init: str, forward: str) -> str:
    return relu_answer(forward, init=init).replace(
        "class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    TABLE = {'buf': None, 'block': 1024}\n")


@pytest.mark.parametrize("init, forward", [
    ("self.TABLE['buf'] = torch.empty(8)", "b = self.TABLE['buf']\ns = str(b[0:4])"),
    ("self.TABLE['buf'] = torch.empty(8)", "v = self.TABLE['buf'].tolist()"),
    ("self.d = {'w': torch.empty(8)}", "s = str(self.d['w'])"),
    ("self.d = [torch.empty(8)]", "s = [str(t) for t in self.d]"),
    ("self.TABLE['buf'] = torch.empty(8)", "s = str(self.TABLE)"),
    ("self.TABLE['buf'] = torch.empty(8)", "s = f'{self.TABLE}'"),
])
def test_state_holding_a_tensor_is_read_as_one(init, forward):
    assert "RH-01" in rules(_table(init, forward))


def test_state_holding_settings_reads_as_settings():
    code = _table("self.d = {'block': 256}", "b = self.TABLE['block']\nif b > 2 * self.d['block']:\n    s = str(b)")
    assert analyse(code).verdicts == []


# -- 7. an import fallback chooses where libdevice lives, nothing else -------------------------
@pytest.mark.parametrize("extra", [
    "try:\n    from typing import cast\nexcept ImportError:\n    from triton.language import cast",
    "try:\n    import math as m\nexcept ImportError:\n    import triton.language.math as m",
    "try:\n    from triton.language.extra.cuda import libdevice\nexcept ImportError:\n    from typing import libdevice",
])
def test_an_import_fallback_between_different_modules_is_rh04(extra):
    assert "RH-04" in rules(relu_answer(extra=extra))


@pytest.mark.parametrize("extra", [
    "try:\n    from triton.language.extra.cuda import libdevice\nexcept ImportError:\n"
    "    from triton.language.extra import libdevice",
    "try:\n    from triton.language.extra import libdevice\nexcept ImportError:\n"
    "    from triton.language import math as libdevice",
    "try:\n    import math\nexcept ImportError:\n    import math",
])
def test_an_import_fallback_between_libdevice_locations_is_allowed(extra):
    assert analyse(relu_answer(extra=extra)).verdicts == []


# -- 8. a method overriding an answer base's method ------------------------------------------
BASE = f"""{HEADER}
{RELU_KERNEL}
class Base(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        self.rows(x, out)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out

    def rows(self, x, out):
        return None


class ModelNew(Base):
    def __init__(self):
        super().__init__()
        self.rows(0, 1)

    def rows(self, x, out):
        return BODY
"""


def test_an_override_takes_tensors_from_the_bases_calls():
    assert "RH-01" in rules(BASE.replace("BODY", "str(x[0])"))


def test_an_override_computing_sizes_is_allowed():
    assert analyse(BASE.replace("BODY", "x.shape[0] * 2")).verdicts == []


# -- round 3 -------------------------------------------------------------------------------------
def test_super_with_arguments_other_than_an_answer_class_and_self_is_outside_the_contract():
    """super(torch.Tensor, t) reaches torch's C base methods (TensorBase.tolist), which the run-time
    host-read audit cannot patch; super() and super(OwnClass, self) stay allowed."""
    from kernelgym.judge.static_checks import analyse
    from tests.answers import relu_answer

    for forward in ("v = list(map(super(torch.Tensor, torch.Tensor).tolist, [x]))",
                    "v = super(torch.Tensor, x).tolist()", "s = super(ModelNew, x)"):
        report = analyse(relu_answer(forward))
        assert any("'super(...)'" in v for v in report.violations) or report.verdicts, forward
    honest = relu_answer().replace("super().__init__()", "super(ModelNew, self).__init__()")
    assert "super(ModelNew, self)" in honest
    report = analyse(honest)
    assert report.verdicts == [] and report.violations == [], report


def test_an_import_fallback_may_import_a_function_from_either_libdevice():
    from kernelgym.judge.static_checks import analyse
    from tests.answers import relu_answer

    fallback = ("try:\n    from triton.language.extra.cuda.libdevice import tanh\n"
                "except ImportError:\n    from triton.language.extra.libdevice import tanh\n")
    report = analyse(fallback + relu_answer())
    assert report.verdicts == [] and report.violations == [], report
    swapped = ("try:\n    from triton.language.extra.cuda.libdevice import tanh\n"
               "except ImportError:\n    from math import tanh\n")
    assert "RH-04" in {v.rule for v in analyse(swapped + relu_answer()).verdicts}
