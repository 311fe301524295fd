"""`launch/judge_beside_sft_check.sh` on the CPU: the detached throughput run leaves an archive the RL gate
reads, then the red-team run leaves its JSON lines, and the `done` marker comes last."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_checks_beside_sft_leave_a_gate_archive_and_redteam_lines(tmp_path):
    f = tmp_path / "fu"
    env = {**os.environ, "DEVICE": "cpu", "N": "2", "F": str(f), "PYTHON": sys.executable, "GPU": "",
           "REDTEAM_ONLY": "rh10_relu_inplace_return_input", "REDTEAM_S": "300", "TRITON_INTERPRET": "1",
           "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    started = subprocess.run(["bash", "launch/judge_beside_sft_check.sh"], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=120)
    assert started.returncode == 0, started.stdout + started.stderr
    deadline = time.monotonic() + 580  # a hang guard, not a speed claim
    while not (f / "done").exists():
        assert time.monotonic() < deadline, (f / "throughput.log").read_text()
        time.sleep(1)
    gate = subprocess.run([sys.executable, "launch/judge_gate.py", str(f / "out" / "throughput.tgz")], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert gate.returncode == 0, gate.stdout
    assert "judge gate: passed" in gate.stdout
    lines = [json.loads(x) for x in (f / "out" / "redteam.jsonl").read_text().splitlines()]
    assert lines and all(x["redteam"].endswith(":rh10_relu_inplace_return_input") for x in lines)
    assert "redteam exit 0" in (f / "out" / "redteam.log").read_text()
