"""The answer contract (an allowlist): what the attacker's classes reached is outside it, what
honest Triton authors write is inside it. Complements test_static_checks.py (rule codes)."""

import pytest

from kernelgym.judge.static_checks import analyse
from tests.answers import HEADER, RELU_KERNEL, relu_answer


def flagged(code: str) -> bool:
    report = analyse(code)
    return bool(report.verdicts or report.violations)


def findings(code: str) -> list[str]:
    report = analyse(code)
    return [f"{v.rule} {v.reason}" for v in report.verdicts] + report.violations


@pytest.mark.parametrize(
    "forward, init, extra",
    [
        # torch compute by methods, values and operators no denylist enumerates
        ("y = x.clamp_min(0)", "", ""),
        ("y = x.kthvalue(1)", "", ""),
        ("y = x.argsort()", "", ""),
        ("x.cumsum_(0)", "", ""),
        ("y = sum(x.unbind(0))", "", ""),
        ("y = (1 + math.e ** -x) ** -1", "", "import math"),
        ("y = x * 0.5", "", ""),
        ("y = abs(x)", "", ""),
        ("y = max(x, x)", "", ""),
        ("f = x.exp\ny = f()", "", ""),
        ("y = getattr(x, 'matmul')(x)", "", ""),
        ("y = x[x > 0]", "", ""),
        ("y = x.new_zeros(1) + x", "", ""),
        ("y = helper(x)", "", "def helper(a):\n    return a * 2"),
        ("y = twice(twice(x))", "", "def twice(a):\n    b = a\n    return b + b"),
        ("f = lambda a: a * 2\ny = f(x)", "", ""),
        ("y = list(map(lambda a: a.exp(), [x]))", "", ""),
        # layers reached indirectly
        ("y = self.fc.forward(x)", "self.fc = nn.Linear(4, 4)", ""),
        ("y = self.layers[0](x)", "self.layers = nn.ModuleList([nn.Linear(4, 4)])", ""),
        ("for m in self.children():\n    x = m(x)", "self.fc = nn.Linear(4, 4)", ""),
        ("y = self.fc(x)", "self.fc: nn.Module = nn.Linear(4, 4)", ""),
        ("y = nn.Module.__call__(self.fc, x)", "self.fc = nn.Linear(4, 4)", ""),
        ("y = type(self)()", "", ""),
        ("y = relu_kernel.fn(x, x, 1, 1)", "", ""),
        # re-exports and introspection
        ("m = typing.sys.modules", "", "import typing"),
        ("m = math.sys", "", "import math"),
        ("", "", "import enum"),
        ("", "", "import dataclasses"),
        ("", "", "from typing import get_type_hints"),
        ("n = x.__class__", "", ""),
        # state through aliases and loop targets
        ("d = self.state\nd['n'] += 1", "self.state = {'n': 0}", ""),
        ("for s in [self.state]:\n    s['n'] = s['n'] + 1", "self.state = {'n': 0}", ""),
        ("_BANK.append(x)", "", "_BANK = []"),
        # interpreter-only names
        ("y = np.zeros(3)", "", ""),
    ],
)
def test_outside_the_contract(forward, init, extra):
    assert flagged(relu_answer(forward, extra=extra, init=init))


def test_class_body_layer_metaclass_and_property_forward_are_outside():
    body = "class ModelNew(nn.Module):\n    fc = nn.Linear(4, 4)\n\n    def forward(self, x):\n        return x\n"
    assert flagged(HEADER + RELU_KERNEL + body)
    meta = "class Meta(type):\n    pass\n\nclass ModelNew(nn.Module, metaclass=Meta):\n    def forward(self, x):\n        return x\n"
    assert flagged(HEADER + RELU_KERNEL + meta)
    prop = "class ModelNew(nn.Module):\n    forward = property(lambda self: None)\n"
    assert flagged(HEADER + RELU_KERNEL + prop)


@pytest.mark.parametrize("kernel_line", [
    "    v = x_ptr.handle.data",
    "    v = np.float32(1.0)",
    "    v = torch.relu(x_ptr)",
])
def test_interpreter_only_kernel_code_is_outside(kernel_line):
    kernel = RELU_KERNEL.replace("    m = offs < n", kernel_line + "\n    m = offs < n")
    assert flagged(relu_answer().replace(RELU_KERNEL, kernel))


def test_a_coding_cookie_is_refused():
    code = "# -*- coding: utf-7 -*-\n" + relu_answer()
    (violation,) = analyse(code).violations
    assert "coding" in violation


def test_findings_name_the_line_and_the_construct():
    (text,) = findings(relu_answer("y = x.clamp_min(0)"))
    assert "line 21" in text and "clamp_min" in text


AUTOTUNE = '''
import functools
from typing import Optional

from triton.language.extra import libdevice
from triton.runtime import driver

__all__ = ["ModelNew"]
_CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)]
_NAMES = {"relu": 0}
SCALE: tl.constexpr = 1


@functools.lru_cache(maxsize=None)
def block_for(n: int) -> int:
    return min(1024, triton.next_power_of_2(n))


@triton.autotune(configs=_CONFIGS, key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x_ptr + offs, mask=m)
    tl.store(out_ptr + offs.to(tl.int64), libdevice.erf(v * 0.0) + tl.maximum(v, 0.0) * SCALE, mask=m)


def _plain(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


plain = triton.jit(_plain)
jit = triton.jit


@jit
def aliased(x_ptr, n):
    pass


class ModelNew(nn.Module):
    """Relu through an autotuned kernel."""

    BLOCK = 256

    def __init__(self, scale: float = 1.0) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_buffer("shift", torch.zeros(4))
        self.scale = scale * 2

    @staticmethod
    def _grid(n):
        return (triton.cdiv(n, 128),)

    @torch.no_grad()
    def forward(self, x: torch.Tensor, bias: Optional[torch.Tensor] = None) -> torch.Tensor:
        assert x.is_contiguous() and x.dtype in (torch.float32, torch.float16)
        if x.dtype == torch.float16:
            raise ValueError("fp32 only")
        if bias is not None and bias.shape[0] != x.shape[-1]:
            raise ValueError("bias")
        x = x.contiguous().view(-1)
        n = x.numel() * 1
        rows, cols = x.shape[0], n // max(1, x.shape[0])
        out = torch.empty_like(x)
        w, b = self.fc.weight, self.fc.bias
        stride = w.stride(0) + b.stride(0) + self.BLOCK + int(self.scale)

        def grid(meta):
            return (triton.cdiv(n, meta["BLOCK"]),)

        tuned[grid](x, out, n)
        plain[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n, BLOCK=block_for(n))
        plain[self._grid(n)](x, out, n, BLOCK=128)
        return out.view(rows, cols // cols * cols) if rows < 0 else out


batch_size = 16
dim = 1024


def get_inputs():
    return [torch.randn(batch_size, dim).abs() * 2]


def get_init_inputs():
    return []


if __name__ == "__main__":
    m = ModelNew()
    x = torch.randn(8, 8)
    torch.testing.assert_close(m(x), torch.relu(x))
'''


def test_honest_unusual_answer_is_inside_the_contract():
    code = HEADER + AUTOTUNE
    report = analyse(code)
    assert report.verdicts == [] and report.violations == [], findings(code)
    assert {"tuned", "_plain", "aliased"} <= set(report.kernels)


@pytest.mark.parametrize(
    "forward, init, extra",
    [
        # kinds must be proved scalar: calls that hand back their arguments keep their kind
        ("self.f(x, out=x)", "self.f = functools.partial(torch.clamp, min=0.0)", "import functools"),
        ("y = cast(Any, x)\ny = y * 2", "", "from typing import Any, cast"),
        ("y = {'k': 0}.get('z', x)\ny = y * 2", "", ""),
        ("y = math.prod([x, x])", "", "import math"),
        # every binding the language makes is typed, or refused
        ("y = o = 0\nmatch (x, x):\n    case (y, o):\n        o[0] = y", "", ""),
        ("y = self.f(x, min=0.0)", "self.f, _ = torch.clamp, 0", ""),
        ("y = self.f(x)", "for self.f in [torch.relu]:\n    pass", ""),
        # callbacks Triton calls with the launch's tensors may only compute launch sizes
        ("def grid(meta):\n    meta['out_ptr'][0] = 1\n    return (1,)\nrelu_kernel[grid](x, x, 1, BLOCK=8)", "", ""),
        ("relu_kernel[lambda meta: (helper(meta['x_ptr']),)](x, x, 1, BLOCK=8)", "",
         "def helper(t):\n    return 1"),
    ],
)
def test_holes_found_by_the_adversary_are_closed(forward, init, extra):
    assert flagged(relu_answer(forward, extra=extra, init=init))


def test_a_kernel_may_call_only_jit_functions():
    kernel = RELU_KERNEL.replace("    m = offs < n", "    offs = plain_helper(offs)\n    m = offs < n")
    code = relu_answer(extra="def plain_helper(v):\n    return v").replace(RELU_KERNEL, kernel)
    assert any("inside a kernel" in f for f in findings(code))


def test_a_cast_outside_kernels_says_where_to_cast():
    (text,) = findings(relu_answer("out2 = x.to(torch.float16)"))
    assert "cast inside the kernel" in text


def test_break_in_a_kernel_is_outside_but_a_device_move_is_inside():
    kernel = RELU_KERNEL.replace("    m = offs < n", "    for i in range(4):\n        break\n    m = offs < n")
    assert any("'break' inside a kernel" in f for f in findings(relu_answer().replace(RELU_KERNEL, kernel)))
    assert findings(relu_answer("x = x.to(x.device)\ny = x.to(device='cuda', non_blocking=True)")) == []
