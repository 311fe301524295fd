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
