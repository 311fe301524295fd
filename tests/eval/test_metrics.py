"""Eval metrics against values computed by hand."""

import math

import pytest

from kernelgym.eval.metrics import (
    best_so_far,
    evaluate,
    fast_p,
    geomean_speedup,
    mean_pass_at_k,
    pass_at_k,
    pass_ks,
    rank_key,
    summarize,
)
from kernelgym.judge.result import Status
from tests.eval.helpers import attempt

# Six answers: four correct at 0.5x, 1.0x, 1.25x, 2.5x eager; one wrong; one runtime cheat (RH-03).
SIX = [attempt("a", eager=0.5, compiled_speedup=0.25, share=0.9),
       attempt("b", eager=1.0, compiled_speedup=0.5, share=0.8),
       attempt("c", eager=1.25, compiled_speedup=1.0, share=1.0),
       attempt("d", eager=2.5, compiled_speedup=1.6, share=0.7),
       attempt("e", 0, Status.WRONG_OUTPUT), attempt("f", 0, Status.CHEAT, eager=9.0, rules=("RH-03",))]


def test_fast_p_counts_every_answer_and_is_strict():
    # fast_p = (1/N) sum 1[correct and speedup > p]; N = 6, the cheat's 9x does not count.
    assert fast_p(SIX, 0.0) == pytest.approx(4 / 6)
    assert fast_p(SIX, 1.0) == pytest.approx(2 / 6)  # 1.0x is not faster than 1
    assert fast_p(SIX, 1.2) == pytest.approx(2 / 6)
    assert fast_p(SIX, 1.5) == pytest.approx(1 / 6)
    assert fast_p(SIX, 2.0) == pytest.approx(1 / 6)
    assert fast_p(SIX, 1.0, "compile") == pytest.approx(1 / 6)  # only 1.6x beats torch.compile
    assert fast_p([], 1.0) is None


def test_untimed_correct_answers():
    untimed = [attempt("a"), attempt("b", status=Status.WRONG_OUTPUT)]
    assert fast_p(untimed, 0.0) == 0.5  # correctness needs no timing
    assert fast_p(untimed, 1.0) is None  # not measured, not 0%
    mixed = [attempt("a"), attempt("b", eager=2.0)]
    assert fast_p(mixed, 1.0) == 0.5  # the untimed one counts as not fast
    assert summarize(mixed).untimed_passes == 1


def test_geomean_and_summary():
    # geomean of 0.5, 1.0, 1.25, 2.5 = (1.5625)^(1/4) = sqrt(1.25)
    assert geomean_speedup(SIX) == pytest.approx(math.sqrt(1.25))
    assert geomean_speedup(SIX, "compile") == pytest.approx((0.25 * 0.5 * 1.0 * 1.6) ** 0.25)
    s = summarize(SIX, ks=(1,))
    assert s.tasks == 6 and s.attempts == 6
    assert s.compile_rate == 1.0 and s.correct_rate == pytest.approx(4 / 6)
    assert s.triton_share == pytest.approx((0.9 + 0.8 + 1.0 + 0.7) / 4)
    assert s.cheat_rate == pytest.approx(1 / 6) and s.cheats_by_rule == {"RH-03": pytest.approx(1 / 6)}
    assert s.fast_p["eager"] == {"0": pytest.approx(4 / 6), "1": pytest.approx(2 / 6), "1.2": pytest.approx(2 / 6),
                                 "1.5": pytest.approx(1 / 6), "2": pytest.approx(1 / 6)}
    assert s.pass_at_k == {"1": pytest.approx(4 / 6)}  # one sample per task: pass@1 = correctness
    assert s.statuses == {"cheat": 1, "ok": 4, "wrong_output": 1}


def test_pass_at_k_unbiased_estimator():
    # n = 5, c = 2: pass@1 = 2/5; pass@2 = 1 - C(3,2)/C(5,2) = 1 - 3/10; pass@3 = 1 - C(3,3)/C(5,3) = 1 - 1/10
    assert pass_at_k(5, 2, 1) == pytest.approx(0.4)
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 2, 3) == pytest.approx(0.9)
    assert pass_at_k(5, 2, 4) == 1.0 and pass_at_k(5, 0, 3) == 0.0
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)
    # Task x: 2 of 4 pass; task y: 0 of 4; task z has 1 sample and is left out of pass@2.
    many = ([attempt("x", i, Status.OK if i < 2 else Status.WRONG_OUTPUT) for i in range(4)]
            + [attempt("y", i, Status.WRONG_OUTPUT) for i in range(4)] + [attempt("z", 0)])
    assert mean_pass_at_k(many, 2) == pytest.approx((1 - 1 / 6 + 0) / 2)  # x: 1 - C(2,2)/C(4,2)
    assert mean_pass_at_k(many, 1) == pytest.approx((0.5 + 0 + 1) / 3)
    assert pass_ks(1) == [1] and pass_ks(8) == [1, 2, 5, 8] and pass_ks(10) == [1, 2, 5, 10]


def test_best_so_far_is_the_test_time_scaling_curve():
    run = [attempt("t", 0, Status.WRONG_OUTPUT, turn=1), attempt("t", 0, turn=2, eager=0.8),
           attempt("t", 0, turn=3, eager=1.5), attempt("t", 0, Status.COMPILE_ERROR, turn=4)]
    assert [best_so_far(run, t)[0].turn for t in (1, 2, 3, 4)] == [1, 2, 3, 3]
    # Between two failures, a compile error beats a cheat, and a compiled answer beats a compile error.
    cheat = attempt(status=Status.CHEAT, rules=("RH-01",), compiled=False).result
    assert rank_key(attempt(status=Status.COMPILE_ERROR).result) > rank_key(cheat)
    assert rank_key(attempt(status=Status.WRONG_OUTPUT).result) > rank_key(attempt(status=Status.COMPILE_ERROR).result)


def test_evaluate_splits_levels_and_degenerate_tasks():
    attempts = [attempt("l1a", 0, turn=1, eager=2.0, level=1), attempt("l1a", 0, Status.WRONG_OUTPUT, turn=2, level=1),
                attempt("l1b", 0, Status.COMPILE_ERROR, turn=1, level=1), attempt("l1b", 0, turn=2, eager=1.1, level=1),
                attempt("l2", 0, Status.WRONG_OUTPUT, turn=1, level=2),
                attempt("l2", 0, Status.CHEAT, turn=2, rules=("RH-01",), level=2),
                attempt("zero", 0, turn=1, eager=50.0), attempt("zero", 0, turn=2, eager=50.0)]
    m = evaluate(attempts, turns=2, samples=1, degenerate=["zero"])
    assert set(m["levels"]) == {"level1", "level2"}
    assert m["overall"]["attempts"] == 3 and m["overall"]["correct_rate"] == pytest.approx(2 / 3)
    assert m["overall"]["fast_p"]["eager"]["1"] == pytest.approx(2 / 3)  # 2.0x and 1.1x, best of turns
    assert m["overall"]["fast_p"]["eager"]["1.5"] == pytest.approx(1 / 3)
    assert m["levels"]["level2"]["correct_rate"] == 0.0
    assert [t["at_turn"]["correct_rate"] for t in m["per_turn"]] == [pytest.approx(1 / 3), pytest.approx(1 / 3)]
    assert [t["best_so_far"]["correct_rate"] for t in m["per_turn"]] == [pytest.approx(1 / 3), pytest.approx(2 / 3)]
    assert m["all_answers"]["overall"]["cheat_rate"] == pytest.approx(1 / 6)
    assert m["degenerate"]["tasks"] == ["zero"] and m["degenerate"]["overall"]["correct_rate"] == 1.0
    assert [r["task_id"] for r in m["tasks"] if r["degenerate"]] == ["zero"] and len(m["tasks"]) == 4


def test_wilson_intervals_against_hand_values_and_clustering():
    from kernelgym.eval.metrics import clustered_wilson, rate_intervals

    # One try per task: plain Wilson. 4 of 6: centre (p + z²/2n) / (1 + z²/n), known to 4 places.
    low, high = clustered_wilson([(1, 1)] * 4 + [(0, 1)] * 2)
    assert (round(low, 4), round(high, 4)) == (0.3000, 0.9032)
    # None of 200 tasks: [0, z² / (n + z²)], not the [0, 0] a bootstrap gives.
    low, high = clustered_wilson([(0, 1)] * 200)
    assert low == 0.0 and high == pytest.approx(1.96 ** 2 / (200 + 1.96 ** 2))
    # Four samples of 50 tasks, each task all-or-nothing: as informative as 50 tries, not 200.
    lumped = clustered_wilson([(4, 4)] * 10 + [(0, 4)] * 40)
    assert lumped == pytest.approx(clustered_wilson([(1, 1)] * 10 + [(0, 1)] * 40))
    # ... while samples that vary within each task count closer to every try.
    spread = clustered_wilson([(1, 4)] * 40 + [(0, 4)] * 10)
    assert spread[1] - spread[0] < clustered_wilson([(1, 1)] * 40 + [(0, 1)] * 10)[1] - \
        clustered_wilson([(1, 1)] * 40 + [(0, 1)] * 10)[0]
    ci = rate_intervals(SIX)
    assert ci["correct_rate"] == pytest.approx(list(clustered_wilson([(1, 1)] * 4 + [(0, 1)] * 2)))
    assert ci["fast_1"][0] < 2 / 6 < ci["fast_1"][1] and ci["cheat_rate"][0] < 1 / 6 < ci["cheat_rate"][1]
    assert rate_intervals([attempt("a"), attempt("b")])["fast_1"] is None  # correct but never timed
    assert summarize(SIX).ci95 == ci and rate_intervals([])["correct_rate"] is None


def test_a_triton_compile_error_is_never_compiled_also_in_stored_results():
    # The in-process judge before 2026-11-27 set compiled once ModelNew was built, before the first
    # launch compiled its kernels: such stored results say compiled=True beside compile_error.
    stored = [attempt("a"), attempt("b", status=Status.WRONG_OUTPUT),
              attempt("c", status=Status.COMPILE_ERROR, compiled=True),
              attempt("d", status=Status.COMPILE_ERROR, compiled=False)]
    s = summarize(stored)
    assert s.compile_rate == pytest.approx(2 / 4)
    assert s.statuses == {"compile_error": 2, "ok": 1, "wrong_output": 1}
    assert rank_key(stored[2].result) == rank_key(stored[3].result)  # both: not compiled
