"""The child's own guards: nothing of the reference reaches it, torch modes left by the answer stop
the harness, outputs are typed without running their code, GPU-only semantics hold on the CPU."""

import subprocess
import sys
import textwrap

import torch

from kernelgym.judge import protocol
from kernelgym.judge.child import _Session, bind_trusted, output_type_problems
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import build_message, judge, load_message
from kernelgym.judge.reference import Reference
from kernelgym.judge.result import Status
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin
from kernelgym.tasks.task import Task

MARKER = "REFERENCE_ONLY_7f3a"
TASK = f'''"""Module docstring naming the trick: {MARKER}."""
import torch
import torch.nn as nn


def _helper(x):
    return x * 0 + 1  # {MARKER}


class Model(nn.Module):
    """{MARKER}"""

    def forward(self, x):
        tag = "{MARKER}"
        return torch.relu(_helper(x) * x)


batch_size = 8
dim = 300


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

_SCAN = textwrap.dedent('''
    import gc, sys
    from kernelgym.judge import protocol
    from kernelgym.judge.child import _Session, bind_trusted

    bind_trusted()
    session = _Session()
    for path in sys.argv[1:3]:
        msg = protocol.decode(open(path, "rb").read())
        reply = getattr(session, "op_" + msg["op"])(msg)
        del msg
        assert reply.get("ok"), reply
    gc.collect()
    marker = sys.argv[3]
    hits = [type(o).__name__ for o in gc.get_objects() for r in [o, *gc.get_referents(o)]
            if isinstance(r, str) and marker in r and r is not marker]
    print("HITS", hits)
''')


def test_no_object_in_the_child_holds_the_reference_source(tmp_path):
    task = Task(task_id="secret", source=TASK)
    ref = Reference(task, "full", "cpu", init_seed=5)
    answer = tmp_path / "answer.py"
    answer.write_text(builtin_answer_path("relu").read_text())
    load, build = load_message(ref, answer, "cpu"), build_message(ref)
    assert MARKER not in repr(load) and "init_seed" not in load and "Model(nn.Module)" not in load["inputs_source"]
    (tmp_path / "load.msg").write_bytes(protocol.encode(load))
    (tmp_path / "build.msg").write_bytes(protocol.encode(build))
    # The marker is passed in pieces: the scanning process must not hold it whole either.
    proc = subprocess.run([sys.executable, "-c", _SCAN.replace("sys.argv[3]", "sys.argv[3] + sys.argv[4]"),
                           str(tmp_path / "load.msg"), str(tmp_path / "build.msg"), MARKER[:9], MARKER[9:]],
                          capture_output=True, text=True, timeout=300, env={**_env(), "TRITON_INTERPRET": "1"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "HITS []" in proc.stdout, proc.stdout[-2000:]


def _env():
    import os

    return dict(os.environ)


class _LazyList(list):
    touched = False

    def __iter__(self):
        _LazyList.touched = True
        return super().__iter__()


def test_output_types_are_checked_without_running_the_outputs_code():
    out = _LazyList([torch.zeros(2)])
    assert output_type_problems(out) == ["_LazyList"]
    assert not _LazyList.touched
    plain = torch.zeros(2)
    assert output_type_problems((plain, None, 3)) == [] and output_type_problems(plain) == []
    assert output_type_problems([torch.nn.Parameter(torch.zeros(1))]) == ["Parameter"]


def test_a_torch_function_mode_left_active_is_seen_before_any_harness_op():
    from torch.overrides import TorchFunctionMode

    bind_trusted()
    session = _Session()
    session.hooks_baseline = (torch._C._len_torch_function_stack(), torch._C._len_torch_dispatch_stack(),
                              sys.gettrace(), sys.getprofile())
    assert session._hooked() == ""
    mode = type("M", (TorchFunctionMode,), {})()
    mode.__enter__()
    try:
        assert "torch function mode" in session._hooked()
        assert session.op_trial({"seed": 0}) == {"hooked": "torch function mode"}  # stops before inputs exist
    finally:
        mode.__exit__(None, None, None)


MODE_AT_IMPORT = '''
import torch
from torch.overrides import TorchFunctionMode

type("Swap", (TorchFunctionMode,), {})().__enter__()
'''


def test_a_mode_entered_at_import_is_a_cheat_verdict():
    answer = builtin_answer_path("relu").read_text() + MODE_AT_IMPORT
    r = judge(load_builtin("relu")[0], answer, JudgeConfig(engine="inprocess", device="cpu", seed=0, static_checks=False))
    assert r.status is Status.CHEAT and {c.rule for c in r.cheats} == {"RH-20"}, r.message
    assert "torch function/dispatch mode is active" in r.message


def test_a_tensor_for_a_constexpr_is_refused_as_on_a_gpu():
    answer = builtin_answer_path("relu").read_text().replace(
        "relu_kernel[grid](x, out, n, BLOCK_SIZE=1024)", "relu_kernel[grid](x, out, n, BLOCK_SIZE=torch.tensor(1024))")
    r = judge(load_builtin("relu")[0], answer, JudgeConfig(engine="inprocess", device="cpu", seed=0, static_checks=False))
    assert r.status is not Status.OK and not r.correct
    assert "tl.constexpr but got a torch.Tensor" in r.error and "on a GPU" in r.error, r.error
