"""`kernelgym eval --compare A B`: B against A, paired on the tasks both runs judged."""

import json
import math

import pytest

from kernelgym.eval.paired import paired, sign_test
from kernelgym.judge.result import Status
from tests.eval.helpers import attempt

W, C, OK = Status.WRONG_OUTPUT, Status.COMPILE_ERROR, Status.OK


def test_paired_rates_on_shared_tasks_only_best_of_turns_per_sample():
    a = [attempt("t1", 0, W), attempt("t1", 1, W),
         attempt("t2", 0, OK, eager=2.0), attempt("t2", 1, W),
         attempt("only_a", 0, OK)]
    b = [attempt("t1", 0, W), attempt("t1", 0, OK, turn=2, eager=0.5), attempt("t1", 1, C),  # sample 0 passes in turn 2
         attempt("t2", 0, OK, eager=3.0), attempt("t2", 1, OK, eager=1.5),
         attempt("only_b", 0, OK)]
    rows = {r.name: r for r in paired(a, b)}
    correct = rows["correct"]
    assert correct.tasks == 2  # only_a and only_b are not compared
    assert (correct.a, correct.b) == (0.25, 0.75)  # t1: 0 -> 0.5, t2: 0.5 -> 1
    assert math.isclose(correct.diff, 0.5) and correct.low <= 0.5 <= correct.high
    assert (correct.b_better, correct.a_better) == (2, 0)
    fast = rows["fast_1"]
    assert (fast.a, fast.b) == (0.25, 0.5)  # t1's pass in B is slower than eager
    assert rows["compiled"].a == 1.0 and rows["compiled"].b == 0.75  # B's compile error on t1 sample 1


def test_sign_test_is_exact_and_two_sided():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 5) == 1.0
    assert math.isclose(sign_test(6, 0), 2 / 64)  # 2 * P(X <= 0) for n = 6
    assert math.isclose(sign_test(1, 7), 2 * (1 + 8) / 256)
    assert sign_test(7, 1) == sign_test(1, 7)


def test_no_shared_task_gives_nothing():
    assert paired([attempt("x")], [attempt("y")]) == []


def _run_dir(path, rows):
    path.mkdir()
    with (path / "results.jsonl").open("w") as fh:
        for a in rows:
            fh.write(json.dumps(a.to_dict()) + "\n")
    return path


def test_compare_command_prints_the_table_and_refuses_bad_runs(tmp_path, capsys):
    from kernelgym.cli import main

    a = _run_dir(tmp_path / "sft", [attempt("t1", 0, W), attempt("t2", 0, OK)])
    b = _run_dir(tmp_path / "rl", [attempt("t1", 0, OK), attempt("t2", 0, OK)])
    assert main(["eval", "--compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "| correct | 2 | 50.0% | 100.0% | +50.0%" in out and "| 1 / 0 |" in out
    assert main(["eval", "--compare", str(a), str(tmp_path / "missing")]) == 2
    assert "has none" in capsys.readouterr().err
    c = _run_dir(tmp_path / "other", [attempt("z", 0, OK)])
    assert main(["eval", "--compare", str(a), str(c)]) == 2
    assert "no task in common" in capsys.readouterr().err
