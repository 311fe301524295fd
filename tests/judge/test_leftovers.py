"""A process the answer starts that outlives its evaluation is found and counted (RH-27), also when it
wiped the environment marker by re-executing with a clean environment: it cannot leave the candidate's
process group (seccomp forbids setsid/setpgid where it is available), which is scanned when the child
has exited."""

import pathlib

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge.sandbox import group_members
from kernelgym.tasks import load_builtin

SURVIVOR = '''
import sys
import torch
import torch.nn as nn
import triton
import triton.language as tl

if torch.os.fork() == 0:  # a grandchild with a clean environment: no marker to find it by
    torch.os.execve(sys.executable, [sys.executable, "-c", "import time; time.sleep(120)"], {})


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        relu_kernel[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
        return out
'''


def test_a_clean_environment_survivor_is_counted_and_killed():
    (task,) = load_builtin("relu")
    r = judge(task, SURVIVOR, JudgeConfig(device="cpu", static_checks=False, timeout_s=120))
    assert r.status is Status.CHEAT and [c.rule for c in r.cheats] == ["RH-27"], (r.status, r.message)
    leftover = [p for p in pathlib.Path("/proc").iterdir() if p.name.isdigit()
                and b"time.sleep(120)" in _cmdline(p)]
    assert not leftover  # killed with the group


def test_group_members_lists_this_process_group():
    import os

    assert os.getpid() in group_members(os.getpgid(0))


def _cmdline(p: pathlib.Path) -> bytes:
    try:
        return (p / "cmdline").read_bytes()
    except OSError:
        return b""
