import random

import pytest

from kernelgym.judge.result import Status
from rewards import RewardConfig, prs_keep_probability, prs_sample

CFG = RewardConfig()  # tau 0.3, f 0.1


@pytest.mark.parametrize(
    "share, expected",
    [(0.35, 0.5), (0.45, 1.0), (0.25, 0.0), (0.3, 0.0), (0.4, 1.0), (0.32, 0.2), (1.0, 1.0)],
)
def test_keep_probability_of_a_pass(result, share, expected):
    assert prs_keep_probability(result(share=share), CFG) == pytest.approx(expected)


def test_keep_probability_custom_tau_f(result):
    cfg = RewardConfig(prs_tau=0.5, prs_f=0.25)
    assert prs_keep_probability(result(share=0.6), cfg) == pytest.approx(0.4)


@pytest.mark.parametrize("status", [Status.WRONG_OUTPUT, Status.CHEAT, Status.COMPILE_ERROR, Status.TIMEOUT])
def test_keep_probability_zero_when_not_correct(result, status):
    assert prs_keep_probability(result(status=status, share=0.9), CFG) == 0.0


def test_keep_probability_zero_for_cheat_verdict_and_missing_profile(result):
    assert prs_keep_probability(result(share=0.9, cheat=True), CFG) == 0.0
    assert prs_keep_probability(result(share=None), CFG) == 0.0


def test_sample_extremes_and_determinism(result):
    results = [result(share=s) for s in (0.9, 0.1, 0.35, 0.35, 0.35, 0.35)] + [result(status=Status.WRONG_OUTPUT)]
    mask = prs_sample(results, CFG, random.Random(0))
    assert mask[0] is True and mask[1] is False and mask[-1] is False
    assert mask == prs_sample(results, CFG, random.Random(0))
    assert len(mask) == len(results)


def test_sample_rate_matches_probability(result):
    results = [result(share=0.35)] * 4000  # keep-prob 0.5
    kept = sum(prs_sample(results, CFG, random.Random(1234)))
    assert 1800 < kept < 2200


def test_sample_draws_one_number_per_result(result):
    rng = random.Random(7)
    prs_sample([result(share=0.9), result(status=Status.CHEAT)], CFG, rng)
    ref = random.Random(7)
    ref.random(), ref.random()
    assert rng.random() == ref.random()
