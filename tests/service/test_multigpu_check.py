"""launch/multigpu_check.sh's ray stage on CPU workers: a Ray head and one worker per "device" started by
launch/ray_head.sh and launch/ray_worker.sh, `kernelgym serve --backend ray` (ray_head.sh serve), the bench
batch over HTTP, and one Ray actor SIGKILLed mid-batch. About a minute: the launch scripts as a user runs them."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

pytest.importorskip("ray")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

ROOT = Path(__file__).resolve().parents[2]
# `ray start` daemons of its own: never beside the other Ray tests (one xdist worker runs them in turn).
pytestmark = [pytest.mark.xdist_group("ray"),
              pytest.mark.skipif(not sys.platform.startswith("linux") or shutil.which("setsid") is None,
                                 reason="the check script needs Linux's /proc and setsid")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_stage_on_cpu_loses_no_request_when_an_actor_is_killed(tmp_path):
    work = tempfile.mkdtemp(prefix="kgmc", dir="/tmp")  # short: Ray's socket paths live under it
    env = os.environ | {
        "HOME": str(tmp_path),  # the Ray token the head generates goes to ~/.ray
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # the `ray` CLI
        "PYTHON": sys.executable, "STAGE": "ray", "DEVICES": "cpu", "NCPU": "2", "PER_GPU": "3", "WARM_S": "2",
        "RAY_PORT": str(free_port()), "PORT": str(free_port()), "WORK": work, "OUT": str(tmp_path / "out"),
    }
    try:
        run = subprocess.run(["bash", str(ROOT / "launch" / "multigpu_check.sh")], env=env, capture_output=True,
                             text=True, timeout=480)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    ray = json.loads((tmp_path / "out" / "summary.json").read_text())["stages"]["ray"]
    assert ray["n"] == 6 and sum(ray["per_worker"].values()) == 6
    assert ray["killed"] is not None and ray["killed"]["in_flight_then"] >= 2
    # the killed actor's jobs were judged again, none was lost, every verdict is the one its kind stands for
    assert ray["lost"] == 0 and ray["retried"] >= 1 and ray["unexpected"] == []
    assert ray["restarts"] >= 1 and ray["actors_alive_after"] == 2 and ray["nodes"] == 3
    assert (tmp_path / "out" / "logs.tgz").stat().st_size > 0
