"""The OpenEnv packaging (kernelgym/env/openenv_env): OpenEnv's own validators accept it."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("openenv")

from openenv.cli._validation import validate_multi_mode_deployment  # noqa: E402

PACKAGE = Path(__file__).resolve().parents[2] / "kernelgym" / "env" / "openenv_env"


def test_openenv_accepts_the_packaged_environment():
    # What `openenv push` / `serve` / UVProvider need: pyproject with a `server` script, openenv, server/app.py main().
    # The one issue left is uv.lock, which `uv lock` writes where it is deployed (it pins torch for that machine).
    ok, issues = validate_multi_mode_deployment(PACKAGE)
    assert ok or [i for i in issues if not i.startswith("Missing uv.lock")] == [], issues
    # `openenv validate`'s static level: the openenv.yaml manifest against OpenEnv's schema.
    run = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", str(PACKAGE), "--level", "static", "--json"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(run.stdout)
    assert run.returncode == 0, report
    assert report["verdict"] == "pass" and {r["check_id"]: r["status"] for r in report["results"]} == {
        "static.manifest": "pass"}


def test_the_packaged_app_without_a_token_runs_code_for_this_host_only(monkeypatch):
    # issue 29.4: OpenEnv's UVProvider serves `server.app:app` on 0.0.0.0, and the app had no token:
    # anyone who reached the port could run code. Without $KERNELGYM_TOKEN, /ws now takes local clients only.
    import importlib.util

    from starlette.testclient import TestClient
    from starlette.websockets import WebSocketDisconnect

    monkeypatch.delenv("KERNELGYM_TOKEN", raising=False)
    monkeypatch.setenv("KERNELGYM_TASKS", "relu")
    spec = importlib.util.spec_from_file_location("kernelgym_packaged_app", PACKAGE / "server" / "app.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    remote = TestClient(module.app, client=("10.1.2.3", 40000))
    with pytest.raises(WebSocketDisconnect) as refused, remote.websocket_connect("/ws"):
        pass
    assert refused.value.code == 1008
    assert remote.get("/health").status_code == 200  # discovery stays open
    for local in ("127.0.0.1", "::1"):
        with TestClient(module.app, client=(local, 40000)).websocket_connect("/ws") as ws:
            ws.send_json({"type": "reset", "data": {"task": "relu"}})
            assert ws.receive_json()["data"]["observation"]["metadata"]["task_id"] == "relu"

    monkeypatch.setenv("KERNELGYM_TOKEN", "s3cret")  # with a token, any host that has it
    spec.loader.exec_module(module)
    remote = TestClient(module.app, client=("10.1.2.3", 40000), headers={"Authorization": "Bearer s3cret"})
    with remote.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"task": "relu"}})
        assert ws.receive_json()["type"] == "observation"
