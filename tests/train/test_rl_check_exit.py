"""launch/rl_check.sh reads the trainer's own exit status through `accelerate launch` (fifteenth session: a
one-process launcher turned the trainer's 3, "time budget reached, resume", into 1, and the stage said failed)."""
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
