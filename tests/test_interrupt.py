"""Ctrl-C in long commands: the first one stops the command cleanly, keeping what was judged.

A terminal's Ctrl-C sends SIGINT to the whole foreground process group, so these tests start the
command in a session of its own and signal its group the same way. Nothing here bets on how fast
the machine is: each test waits for an event (a judge child is running), then for the command to
exit, under a ceiling far above what a clean stop needs and far below what finishing the work would.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelgym.tasks import data_dir
from tests.tasks import kernelbench_style as kb

CEILING_S = 120  # the commands below, left alone, run far longer (a chunk of 64 answers; a 600 s hang)
pytestmark = pytest.mark.timeout(1200)  # the ceilings below, not the suite's 600 s, bound these tests


def _start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "kernelgym.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _children(pid: int) -> list[str]:
    """Command lines of the live children of `pid`."""
    out = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                out.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue
    return out


def _wait_for_child(proc: subprocess.Popen, needle: str) -> None:
    """Until `proc` has a child whose command line holds `needle` (the work Ctrl-C must stop has begun)."""
    deadline = time.monotonic() + 600  # a ceiling for a loaded machine, not a measurement
    while not any(needle in c for c in _children(proc.pid)):
        if proc.poll() is not None:
            pytest.fail(f"the command ended before its work began: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("no child started")
        time.sleep(0.2)


def _ctrl_c(proc: subprocess.Popen) -> tuple[str, str]:
    os.killpg(proc.pid, signal.SIGINT)
    try:
        return proc.communicate(timeout=CEILING_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(f"still running {CEILING_S} s after Ctrl-C\n{out}\n{err}")


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_ctrl_c_stops_a_coldstart_build_and_keeps_what_was_judged(tmp_path):
    out = tmp_path / "corpus"
    # --no-warm-pool: the judge processes are then this command's own children, so the test sees judging begin
    # (a warm pool forks them ahead of time from its fork server: their existence says nothing about judging)
    common = ("data", "coldstart", "--out", str(out), "--jobs", "2", "--trials", "2", "--no-progress", "--no-warm-pool")
    first = subprocess.run([sys.executable, "-m", "kernelgym.cli", *common, "--n", "1", "--repair-fraction", "0"],
                           capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    judged = _lines(out / "judged.jsonl")
    assert any(a["status"] == "ok" for a in judged)

    # Resumed with many more answers wanted: its next chunk is 64 answers, minutes of judging on two cores.
    proc = _start(*common, "--n", "200")
    _wait_for_child(proc, "kernelgym.judge.child")
    stdout, stderr = _ctrl_c(proc)

    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stdout and "Traceback" not in stderr
    after = _lines(out / "judged.jsonl")
    assert after[:len(judged)] == judged  # every earlier verdict kept
    assert len(after) < len(judged) + 64  # the chunk in flight was dropped, not judged to its end
    # no verdict made up from a killed child (a SIGKILL reads as oom or crashed)
    assert not [a for a in after[len(judged):] if a["status"] in ("oom", "crashed", "timeout")]
    rows = [r for split in ("train", "heldout") if (out / f"{split}.jsonl").exists()
            for r in _lines(out / f"{split}.jsonl")]  # the corpus is written from what was judged
    assert {a["task_id"] for a in judged if a["status"] == "ok"} <= {r["task_id"] for r in rows if r["kind"] == "single"}


def test_ctrl_c_stops_run_during_a_hanging_preflight(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text((data_dir() / "tasks" / "relu.py").read_text())
    (tasks / "gelu.py").write_text(kb.HANGS)  # a reference that never returns, under a 600 s limit
    proc = _start("run", "--device", "cpu", "--tasks", str(tasks), "--jobs", "2", "--task-timeout", "600")
    _wait_for_child(proc, "multiprocessing")  # the preflight's fork server and its children
    stdout, stderr = _ctrl_c(proc)
    assert proc.returncode == 130, stdout + stderr
    assert "preflight of 2 task(s)" in stdout  # said before the preflight's first child started
    assert "interrupted" in stderr and "Traceback" not in stderr and "KeyboardInterrupt" not in stderr
