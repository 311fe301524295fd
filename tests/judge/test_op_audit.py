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

DYNAMIC_ONLY = JudgeConfig(engine="inprocess", device="cpu", static_checks=False, timeout_s=120)


def test_torch_arithmetic_before_a_token_copy_kernel_is_rh01_at_run_time():
    result = judge(load_builtin("relu")[0], TOKEN_COPY, DYNAMIC_ONLY)
    assert result.status is Status.CHEAT
    assert any(c.rule == "RH-01" and "clamp_min" in c.reason and c.stage == "runtime" for c in result.cheats)


def test_views_allocation_and_launches_are_not_torch_compute():
    honest = relu_answer("x = x.view(-1).view(x.shape)\nscratch = torch.zeros_like(x)")
    result = judge(load_builtin("relu")[0], honest, DYNAMIC_ONLY)
    assert result.status is Status.OK, result.message


def test_partial_replacement_lets_torch_compute():
    config = JudgeConfig(engine="inprocess", device="cpu", static_checks=False, timeout_s=120, allow_torch_ops=True)
    result = judge(load_builtin("relu")[0], TOKEN_COPY, config)
    assert not any(c.rule == "RH-01" for c in result.cheats), result.message


# Reads a tensor's values as text and computes relu in host Python: printing runs no aten operator
# under a dispatch mode (torch disables the active modes while it formats), so only the host-read
# guards see it. Red-team round 2 reached this through static typing gaps (a local list launders a
# tensor into a "scalar"); this is the run-time backstop with the static rules off.
HOST_TEXT = relu_answer().replace(
    "        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)\n",
    "        touch_kernel[(1,)](out)\n"
    "        flat = out.view(-1)\n"
    "        for i, v in enumerate(x.reshape(-1).tolist()):\n"
    "            flat[i].fill_(v if v > 0 else 0.0)\n",
).replace("class ModelNew", '''@triton.jit
def touch_kernel(out):
    pass


class ModelNew''')


def test_host_reads_of_tensor_values_are_counted_while_recording():
    import torch

    from kernelgym.judge import op_audit

    op_audit.guard_host_reads()
    t = torch.randn(4)
    with op_audit.recording():
        str(t), repr(t), f"{t}", t.tolist(), t.untyped_storage().tolist()
    found = op_audit.forbidden()
    assert {"host read of values (str/repr/format/print)", "host read of values (tolist)",
            "host read of values (storage)"} <= set(found), found
    with op_audit.recording():
        with op_audit.paused():  # Triton's launch path
            str(t), t.tolist()
        t.view(2, 2).shape
    assert op_audit.forbidden() == {}
    assert str(t)  # outside a recording nothing changes


def test_computing_in_host_python_from_listed_values_is_rh01_at_run_time():
    result = judge(load_builtin("relu")[0], HOST_TEXT, DYNAMIC_ONLY)
    assert result.status is Status.CHEAT, result.message
    assert any(c.rule == "RH-01" and "host read" in c.reason for c in result.cheats), result.cheats
