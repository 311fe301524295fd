"""launch/rl_check.sh reads the trainer's own exit status through `accelerate launch` (fifteenth session: a
one-process launcher turned the trainer's 3, "time budget reached, resume", into 1, and the stage said failed)."""
import json
import re
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "launch" / "rl_check.sh"


def launcher_code(code: int, log: Path) -> str:
    # the function as the script defines it, run by bash: no copy of its logic here
    body = re.search(r"^launcher_code\(\) \{.*?; \}$", SCRIPT.read_text(), re.M | re.S)
    assert body, "launcher_code() not found in launch/rl_check.sh"
    out = subprocess.run(["bash", "-c", body.group(0) + f'\nlauncher_code {code} "{log}"'],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_budget_exit_through_the_one_process_launcher_is_resume(tmp_path):
    log = tmp_path / "rl.log"
    log.write_text("train.grpo INFO time budget of 1477 s reached at step 30 of 60\nsubprocess.CalledProcessError: "
                   "Command '['python3', 'train/grpo.py']' returned non-zero exit status 3.\n")
    assert launcher_code(1, log) == "3"


def test_other_failures_keep_their_code(tmp_path):
    log = tmp_path / "rl.log"
    log.write_text("subprocess.CalledProcessError: Command '['python3', 'train/grpo.py']' returned non-zero exit status 1.\n")
    assert launcher_code(1, log) == "1"
    assert launcher_code(0, log) == "0"
    assert launcher_code(124, tmp_path / "missing.log") == "124"


def rl_parts_dir(parts: Path) -> str:
    body = re.search(r"^rl_parts_dir\(\) \{.*?^\}$", SCRIPT.read_text(), re.M | re.S)
    assert body, "rl_parts_dir() not found in launch/rl_check.sh"
    out = subprocess.run(["bash", "-c", "full_rl_dir=runs/grpo_qwen_lora_full\n" + body.group(0) + f'\nrl_parts_dir "{parts}"'],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_carried_rl_parts_go_to_the_run_they_came_from(tmp_path):
    # Twentieth session: a carry call without RL_BASE joined the full-model run's checkpoint into the LoRA run's
    # directory, and RL on the full model began afresh. The manifest says which run: base_model.sha256 is the
    # full SFT model's checksum, written only by RL on it.
    full, lora = tmp_path / "full", tmp_path / "lora"
    full.mkdir(), lora.mkdir()
    files = ["adapter_config.json", "adapter_model.safetensors", "optimizer.pt"]
    (full / "manifest.json").write_text(json.dumps({"files": [{"name": n} for n in [*files, "base_model.sha256"]]}))
    (lora / "manifest.json").write_text(json.dumps({"files": [{"name": n} for n in files]}))
    assert rl_parts_dir(full) == "runs/grpo_qwen_lora_full"
    assert rl_parts_dir(lora) == "runs/grpo_qwen_lora"
