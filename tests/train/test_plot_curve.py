"""The RL learning-curve plot reads a trainer_state.json log as TRL writes it."""

import csv
import json

import pytest

from train.plot_curve import CurveError, main, read_log, series


def _state(tmp_path, history):
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": len(history), "log_history": history}))
    return path


STEPS = [
    {"step": 1, "reward": -0.5, "kernelgym/compiled": 0.25, "kernelgym/correct": 0.0, "kernelgym/turns_used": 2.0,
     "kernelgym/status/compile_error": 0.75, "kernelgym/status/ok": 0.0, "timing/step_s": 30.0,
     "timing/rollout_s": 25.0, "loss": 0.1},
    {"step": 2, "reward": 0.1, "kernelgym/compiled": 0.5, "kernelgym/correct": 0.125, "kernelgym/fast_1": 0.0625,
     "kernelgym/turns_used": 1.5, "kernelgym/status/ok": 0.125, "timing/step_s": 28.0, "timing/rollout_s": 22.0},
    {"step": 2, "train_runtime": 58.0},  # the end-of-training summary: no rollout metrics
]


def test_reads_the_steps_and_leaves_gaps_not_zeros(tmp_path):
    rows = read_log(_state(tmp_path, STEPS))
    assert [r["step"] for r in rows] == [1, 2]
    assert series(rows, "kernelgym/fast_1") == ([2], [0.0625])  # not logged at step 1: a gap
    assert series(rows, "kernelgym/correct") == ([1, 2], [0.0, 0.125])


def test_cli_writes_png_and_csv(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out = tmp_path / "curve.png"
    assert main([str(_state(tmp_path, STEPS)), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    assert "2 steps" in printed and "Verdicts" in printed and "Compiled and correct" in printed
    with out.with_suffix(".csv").open() as fh:
        table = list(csv.DictReader(fh))
    assert [r["step"] for r in table] == ["1", "2"] and table[0]["kernelgym/fast_1"] == ""
    assert table[1]["kernelgym/status/ok"] == "0.125" and "loss" not in table[0]


def test_a_log_without_training_steps_is_a_clear_error(tmp_path, capsys):
    assert main([str(_state(tmp_path, [{"step": 0, "train_runtime": 1.0}]))]) == 2
    assert "no logged training steps" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.json")]) == 2
    with pytest.raises(CurveError):
        read_log(tmp_path / "missing.json")
