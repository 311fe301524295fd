"""`launch/judge_gate.py`: a GPU session starts RL only after a throughput run judged its batch as expected."""

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

GATE = Path(__file__).resolve().parents[2] / "launch" / "judge_gate.py"


def _archive(path: Path, reports: dict[str, dict]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, report in reports.items():
            data = json.dumps(report).encode()
            info = tarfile.TarInfo(f"./{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _gate(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(GATE), str(path)], capture_output=True, text=True, timeout=60)


def test_a_batch_judged_as_expected_opens_the_gate(tmp_path):
    good = {"modes": [{"mode": "service", "statuses": {"ok": 3, "wrong_output": 1}, "unexpected": []}]}
    done = _gate(_archive(tmp_path / "t.tgz", {"bench_1_16x1.json": good, "machine.txt": {}}))
    assert done.returncode == 0, done.stdout
    assert "4 judged" in done.stdout and "passed" in done.stdout


def test_unexpected_verdicts_a_missing_archive_or_no_report_keep_it_shut(tmp_path):
    broken = {"modes": [{"mode": "service", "statuses": {"system_error": 4},
                         "unexpected": ["correct relu: system_error (the child could not start)"]}]}
    done = _gate(_archive(tmp_path / "b.tgz", {"bench_1_16x1.json": broken}))
    assert done.returncode == 1 and "system_error (the child" in done.stdout and "FAILED" in done.stdout
    assert _gate(tmp_path / "missing.tgz").returncode == 1
    assert _gate(_archive(tmp_path / "e.tgz", {"runs.txt": {}})).returncode == 1
