"""Ctrl-C stops `kernelgym eval` cleanly: the verdicts written before it stay, nothing is judged to the end.

The scripted endpoint (conftest.py) serves the built-in relu answer, each with a comment of its own so that
the service's cache cannot answer one from another: 32 samples judged for real one at a time keep the
embedded service busy far longer than the SIGINT takes to follow the first verdict. (Eight identical ones
were all done before it once evaluations got fast: one judged, the rest from the cache.) The command runs in a session of its own and
its group gets SIGINT, as from a terminal; the test waits for the first verdict (an event), then for
the exit under a ceiling far above a clean stop.
"""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.timeout(900)
SAMPLES = 32


def test_ctrl_c_stops_an_eval_and_keeps_its_verdicts(scripted_endpoint, tmp_path):
    api_base, model = scripted_endpoint
    model.distinct = True
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "kernelgym.cli", "eval", "--model", "scripted", "--api-base",
                             api_base, "--tasks", "relu", "--samples", str(SAMPLES), "--judge-devices", "cpu",
                             "--judge-jobs", "1", "--trials", "1", "--no-audit", "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    results = out / "results.jsonl"
    deadline = time.monotonic() + 600  # a ceiling for a loaded machine, not a measurement
    while not (results.is_file() and results.read_text().strip()):
        if proc.poll() is not None:
            pytest.fail(f"eval ended before its first verdict: {proc.communicate()}")
        if time.monotonic() > deadline:
            proc.kill()
            pytest.fail("no verdict")
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGINT)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail(f"still running 120 s after Ctrl-C: {proc.communicate()}")
    assert proc.returncode == 130, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    verdicts = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    assert 1 <= len(verdicts) < SAMPLES  # what was judged is kept; the rest was not judged to the end
    # no verdict made up from a killed child: each is the real one for its answer (the scripted relu samples
    # alternate between the built-in answer, ok, and torch.relu, cheat RH-01)
    assert {v["result"]["status"] for v in verdicts} <= {"ok", "cheat"}, verdicts
