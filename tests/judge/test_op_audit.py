"""The run-time twin of the contract's torch-compute rule (`op_audit`): with the static rules off,
torch arithmetic before a token copy kernel is still RH-01; allocation, views and Triton's own
launch bookkeeping are not."""

from kernelgym.judge import JudgeConfig, judge
from kernelgym.judge.result import Status
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer

TOKEN_COPY = relu_answer().replace(
    "        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n",
    "        y = x.clamp_min(0)\n"
    "        copy_kernel[(triton.cdiv(x.numel(), 1024),)](y, out, x.numel(), BLOCK=1024)\n",
).replace("class ModelNew", '''@triton.jit
def copy_kernel(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)


class ModelNew''')

DYNAMIC_ONLY = JudgeConfig(device="cpu", static_checks=False, timeout_s=120)


def test_torch_arithmetic_before_a_token_copy_kernel_is_rh01_at_run_time():
    result = judge(load_builtin("relu")[0], TOKEN_COPY, DYNAMIC_ONLY)
    assert result.status is Status.CHEAT
    assert any(c.rule == "RH-01" and "clamp_min" in c.reason and c.stage == "runtime" for c in result.cheats)


def test_views_allocation_and_launches_are_not_torch_compute():
    honest = relu_answer("x = x.view(-1).view(x.shape)\nscratch = torch.zeros_like(x)")
    result = judge(load_builtin("relu")[0], honest, DYNAMIC_ONLY)
    assert result.status is Status.OK, result.message


def test_partial_replacement_lets_torch_compute():
    config = JudgeConfig(device="cpu", static_checks=False, timeout_s=120, allow_torch_ops=True)
    result = judge(load_builtin("relu")[0], TOKEN_COPY, config)
    assert not any(c.rule == "RH-01" for c in result.cheats), result.message
