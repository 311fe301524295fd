import math

import pytest

from kernelgym.judge.result import Status
from rewards import RewardConfig, drkernel_reward, needs_reevaluation, settle_outlier

CFG = RewardConfig()  # threshold 10


def test_needs_reevaluation(result):
    assert needs_reevaluation(result(speedup=12.0), CFG)
    assert not needs_reevaluation(result(speedup=10.0), CFG)  # strictly above
    assert not needs_reevaluation(result(speedup=None, share=None), CFG)
    assert not needs_reevaluation(result(status=Status.WRONG_OUTPUT, speedup=50.0), CFG)
    assert not needs_reevaluation(result(speedup=1e6), RewardConfig(outlier_threshold=math.inf))


def test_needs_reevaluation_uses_baseline(result):
    cfg = RewardConfig(baseline="compile")
    assert needs_reevaluation(result(speedup=2.0, compile_speedup=11.0), cfg)
    assert not needs_reevaluation(result(speedup=50.0, compile_speedup=2.0), cfg)


def test_settle_takes_lower_speedup(result):
    first, second = result(speedup=40.0, share=0.9), result(speedup=1.5, share=0.7)
    assert settle_outlier(first, second, CFG) is second
    assert drkernel_reward(settle_outlier(first, second, CFG), CFG) == pytest.approx(0.5 + 0.75 + 0.35)
    assert settle_outlier(second, first, CFG) is second  # lower wins whichever came first
    tie = result(speedup=40.0)
    assert settle_outlier(first, tie, CFG) is tie


def test_settle_failed_reevaluation_wins(result):
    first, second = result(speedup=40.0), result(status=Status.WRONG_OUTPUT)
    assert settle_outlier(first, second, CFG) is second
    assert drkernel_reward(settle_outlier(first, second, CFG), CFG) == 0.0


def test_settle_unmeasured_reevaluation_wins(result):
    first, second = result(speedup=40.0, share=0.9), result(speedup=None, share=None)
    assert settle_outlier(first, second, CFG) is second
