"""`launch/precision_probe.py` (calibration data for the TF32 class, issue 26) runs on the CPU and prints one
row per (task, draw, mode) for matrix-product tasks only."""

import importlib.util
from pathlib import Path

PROBE = Path(__file__).resolve().parents[2] / "launch" / "precision_probe.py"


def test_the_probe_prints_rows_for_tf32_class_tasks_only(capsys):
    spec = importlib.util.spec_from_file_location("precision_probe", PROBE)
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    assert probe.main(["--device", "cpu", "--tasks", "matmul_square,relu", "--draws", "signed,tiny"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert {r[0] for r in rows} == {"matmul_square"}  # relu runs no matrix product
    assert {(r[1], r[2]) for r in rows} == {(d, m) for d in ("signed", "tiny") for m in probe.MODES}
    stats = {(r[1], r[2]): float(r[3]) for r in rows}
    # the float32 reference is near its float64 one; fp16 on the tiny draw is not (values below fp16's range)
    assert stats[("signed", "fp32")] < 1e-5 and stats[("tiny", "fp16")] > 0.1
