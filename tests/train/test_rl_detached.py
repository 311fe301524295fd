"""`launch/rl_detached.sh start`: the detached run's order of stages, against a stand-in rl_check.sh that records
each call's STAGE (the real stages need the model and a GPU; rehearsed on this CPU with the tiny model)."""

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

STAND_IN = """#!/usr/bin/env bash
# records the stage it was asked for; the sft stage leaves an adapter as a finished SFT does
echo "$STAGE rl_seconds=${RL_SECONDS:-} eval_gpus=${EVAL_GPUS:-} models=${MODELS:-} rl_base=${RL_BASE:-}" >> "$CALLS"
if [[ $STAGE == sft ]]; then mkdir -p runs/sft_qwen_lora && touch runs/sft_qwen_lora/adapter_model.safetensors; fi
if [[ $STAGE == sftfull ]]; then mkdir -p runs/sft_qwen_full && touch runs/sft_qwen_full/config.json; fi
if [[ $STAGE == eval ]]; then sleep 1; echo "eval done" >> "$CALLS"; fi
exit 0
"""


def run_start(tmp_path: Path, **env: str) -> list[str]:
    tree = tmp_path / "tree"
    for d in ("kernelgym", "train", "rewards", "data", "configs", "launch"):
        (tree / d).mkdir(parents=True)
    (tree / "pyproject.toml").write_text("")
    shutil.copy(ROOT / "launch" / "rl_detached.sh", tree / "launch" / "rl_detached.sh")
    (tree / "launch" / "rl_check.sh").write_text(STAND_IN)
    calls, work = tmp_path / "calls.txt", tmp_path / "work"
    full = {**os.environ, "CALLS": str(calls), "KG_RL_WORK": str(work), "OUT": str(tmp_path / "out"), **env}
    subprocess.run(["bash", "launch/rl_detached.sh", "start"], cwd=tree, env=full, check=True, timeout=60)
    pid = int((work / "detached.pid").read_text())
    deadline = time.monotonic() + 60
    while (work / "detached.rc").exists() is False:  # written by the run as its last act
        assert time.monotonic() < deadline, (work / "logs" / "detached.log").read_text()
        time.sleep(0.1)
    with pytest.raises(ProcessLookupError):
        for _ in range(100):
            os.kill(pid, 0)
            time.sleep(0.05)
    return calls.read_text().splitlines() + [(work / "detached.rc").read_text().strip()]


def test_sft_then_rl_with_the_sft_eval_beside_it(tmp_path):
    lines = run_start(tmp_path, DETACHED_EVAL_GPU="1", DETACHED_RL_SECONDS="600")
    stages = [line.split()[0] for line in lines[:-1]]
    assert stages[0] == "sft" and "rl" in stages and "eval" in stages
    assert any(line.startswith("rl rl_seconds=600") for line in lines)
    assert any(line.startswith("eval ") and "eval_gpus=1 models=sft" in line for line in lines)
    assert lines[-1] == "sft 0 rl 0"


def test_no_rl_runs_sft_and_waits_for_its_eval(tmp_path):
    # a 1-GPU machine: SFT and its evals only; the run ends only once the eval has
    lines = run_start(tmp_path, DETACHED_EVAL_GPU="0", DETACHED_RL_SECONDS="0")
    stages = [line.split()[0] for line in lines[:-1]]
    assert stages == ["sft", "eval", "eval"]  # the second "eval" line is the stand-in's "eval done"
    assert lines[-1] == "sft 0 rl off"


def test_full_sft_is_evaluated_on_the_machine_and_rl_trains_on_it(tmp_path):
    # the full model's weights cannot leave the machine: its eval runs there, and RL after it trains its LoRA on
    # that model (RL_BASE=sftfull: rl_check.sh's own run directory and MODELS=rlfull)
    lines = run_start(tmp_path, DETACHED_SFT_STAGE="sftfull", DETACHED_EVAL_GPU="0", DETACHED_RL_SECONDS="600",
                      DETACHED_EVAL_MODELS="sftfull")
    stages = [line.split()[0] for line in lines[:-1]]
    assert stages[0] == "sftfull" and "rl" in stages and "eval" in stages
    assert any(line.startswith("rl rl_seconds=600") and line.endswith("rl_base=sftfull") for line in lines)
    assert any(line.startswith("eval ") and "models=sftfull" in line for line in lines)
    assert lines[-1] == "sft 0 rl 0"


def test_full_sft_without_rl_waits_for_its_eval(tmp_path):
    lines = run_start(tmp_path, DETACHED_SFT_STAGE="sftfull", DETACHED_EVAL_GPU="0", DETACHED_RL_SECONDS="0",
                      DETACHED_EVAL_MODELS="sftfull")
    stages = [line.split()[0] for line in lines[:-1]]
    assert stages == ["sftfull", "eval", "eval"]
    assert lines[-1] == "sft 0 rl off"


def test_lora_sft_leaves_rl_on_the_lora_adapter(tmp_path):
    lines = run_start(tmp_path, DETACHED_RL_SECONDS="600")
    assert any(line.startswith("rl rl_seconds=600") and line.endswith("rl_base=") for line in lines)


def test_an_unknown_sft_stage_is_refused_before_anything_starts(tmp_path):
    tree = tmp_path / "tree"
    (tree / "launch").mkdir(parents=True)
    shutil.copy(ROOT / "launch" / "rl_detached.sh", tree / "launch" / "rl_detached.sh")
    env = {**os.environ, "KG_RL_WORK": str(tmp_path / "work"), "DETACHED_SFT_STAGE": "qlora"}
    done = subprocess.run(["bash", "launch/rl_detached.sh", "start"], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode != 0 and "sft or sftfull, not qlora" in done.stdout
    assert not (tmp_path / "work" / "detached.pid").exists()


def gate_archive(path: Path, unexpected: list[str]) -> Path:
    report = {"modes": [{"mode": "local", "statuses": {"ok": 3, "cheat": 1}, "unexpected": unexpected}]}
    data = json.dumps(report).encode()
    with tarfile.open(path, "w:gz") as tar:
        info = tarfile.TarInfo("bench_1_16x1.json")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def run_gated(tmp_path: Path, gate: Path, wait_s: str = "5") -> list[str]:
    return run_start(tmp_path, DETACHED_SFT_STAGE="sftfull", DETACHED_RL_SECONDS="600",
                     DETACHED_RL_GATE=str(gate), DETACHED_RL_GATE_WAIT_S=wait_s, PYTHON=sys.executable)


@pytest.fixture(autouse=True)
def _copy_gate(monkeypatch):
    # run_start's tree holds only rl_detached.sh: the gate script rides beside it, as in a real checkout
    real = shutil.copy

    def copy(src, dst, *a, **k):
        out = real(src, dst, *a, **k)
        if Path(src).name == "rl_detached.sh":
            real(ROOT / "launch" / "judge_gate.py", Path(dst).parent / "judge_gate.py")
        return out
    monkeypatch.setattr(shutil, "copy", copy)


def test_rl_waits_for_a_passing_judge_gate(tmp_path):
    lines = run_gated(tmp_path, gate_archive(tmp_path / "throughput.tgz", []))
    assert any(line.startswith("rl rl_seconds=600") for line in lines)
    assert lines[-1] == "sft 0 rl 0"
    assert "judge gate before rl: pass" in (tmp_path / "work" / "logs" / "detached.log").read_text()


def test_a_failing_judge_gate_stops_rl(tmp_path):
    lines = run_gated(tmp_path, gate_archive(tmp_path / "throughput.tgz", ["add_v1: system_error, expected ok"]))
    assert not any(line.startswith("rl ") for line in lines)
    assert lines[-1] == "sft 0 rl gate_failed"


def test_a_gate_that_never_comes_stops_rl(tmp_path):
    lines = run_gated(tmp_path, tmp_path / "never.tgz", wait_s="1")
    assert not any(line.startswith("rl ") for line in lines)
    assert lines[-1] == "sft 0 rl gate_failed"
