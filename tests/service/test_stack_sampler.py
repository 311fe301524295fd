"""launch/stack_sampler.py (issue 26's where-does-the-CPU-go diagnostic): py-spy's stacks summed by the innermost
frame's library, the innermost frame and the innermost kernelgym frame; the busiest kernelgym process is picked."""

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLER = Path(__file__).resolve().parents[2] / "launch" / "stack_sampler.py"
spec = importlib.util.spec_from_file_location("stack_sampler", SAMPLER)
stack_sampler = importlib.util.module_from_spec(spec)
spec.loader.exec_module(stack_sampler)

RAW = """\
<module> (kernelgym/judge/replay_server.py:40);ReplayOps.op_replay_timed_outputs (/x/kernelgym/judge/replay_session.py:260);replay_timed_outputs (/x/kernelgym/judge/replay_server.py:210);synchronize (torch/cuda/__init__.py:1080);cuStreamSynchronize (libcuda.so.1);0x7f00 (libcuda.so.1) 6
<module> (kernelgym/judge/replay_server.py:40);replay_trial (/x/kernelgym/judge/replay_server.py:150);at::native::copy_<float, std::vector<int>> (libtorch_cuda.so) 3
<module> (kernelgym/judge/replay_server.py:40);_loop (threading.py:100) 1
bad line without a count
"""


def test_stacks_are_summed_by_library_innermost_frame_and_judge_step():
    stacks = stack_sampler.parse_raw(RAW)
    assert [n for _, n in stacks] == [6, 3, 1]
    text = stack_sampler.summarise(stacks)
    assert text.startswith("10 samples")
    lines = text.splitlines()
    assert "60.0%  libcuda.so.1" in " ".join(lines)
    assert "30.0%  libtorch_cuda.so" in " ".join(lines)
    assert "60.0%  replay_timed_outputs (kernelgym/judge/replay_server.py)" in " ".join(lines)
    assert "30.0%  replay_trial (kernelgym/judge/replay_server.py)" in " ".join(lines)
    assert any("at::native::copy_<…> (libtorch_cuda.so)" in line for line in lines)  # templates shortened
    # a stack whose innermost kernelgym frame is the module itself, not a judge step
    assert "10.0%  <module> (kernelgym/judge/replay_server.py)" in " ".join(lines)
    assert "10.0%  _loop (threading.py:100)" in " ".join(lines)  # Python frames keep their angle brackets
    assert "60.0%  ReplayOps.op_replay_timed_outputs" in " ".join(lines)  # the request the stack is in
    assert "30.0%  (no request) replay_trial (kernelgym/judge/replay_server.py)" in " ".join(lines)


def test_no_samples_is_said_not_divided_by():
    assert "no samples" in stack_sampler.summarise([])


SPIN = "import sys, time\nprint('spinning', flush=True)\nwhile sys.stdin: sum(range(1000))\n"


def _spinner():
    return subprocess.Popen([sys.executable, "-c", SPIN, "kernelgym-stack-sampler-test"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)


def test_the_spinning_kernelgym_process_is_among_the_busiest():
    spinner = _spinner()
    try:
        assert spinner.stdout.readline().strip() == "spinning"
        picked = dict(stack_sampler.busiest(8, window=1.0))
        assert spinner.pid in picked and picked[spinner.pid] > 0
    finally:
        spinner.kill()
        spinner.wait(timeout=60)


PY_SPY = os.environ.get("KERNELGYM_PY_SPY") or shutil.which("py-spy")


@pytest.mark.skipif(PY_SPY is None, reason="py-spy is not installed (KERNELGYM_PY_SPY names one)")
def test_py_spy_samples_the_busiest_process(tmp_path):
    spinner = _spinner()
    out = tmp_path / "stacks.txt"
    try:
        assert spinner.stdout.readline().strip() == "spinning"
        subprocess.run([sys.executable, str(SAMPLER), str(out), "--py-spy", PY_SPY, "--after", "0", "--for", "2",
                        "--top", "1", "--rate", "20"], check=True, timeout=120)
    finally:
        spinner.kill()
        spinner.wait(timeout=60)
    text = out.read_text()
    assert f"pid {spinner.pid}" in text and "py-spy got nothing" not in text, text
    assert re.search(r"^\d+ samples", text.split(f"pid {spinner.pid}")[1].splitlines()[1]), text
