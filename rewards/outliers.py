"""Outlier speedups: a speedup above `cfg.outlier_threshold` is re-measured before it is rewarded.

Very large speedups are more often timing noise or a kernel that skips work on some inputs than
real wins; one re-evaluation and taking the less flattering result removes most of them.
"""

from __future__ import annotations

from kernelgym.judge.result import EvalResult
from rewards.config import RewardConfig
from rewards.functions import is_pass, speedup


def needs_reevaluation(result: EvalResult, cfg: RewardConfig) -> bool:
    """True when a pass reports a speedup (against `cfg.baseline`) above `cfg.outlier_threshold`."""
    s = speedup(result, cfg)
    return is_pass(result) and s is not None and s > cfg.outlier_threshold


def settle_outlier(first: EvalResult, second: EvalResult, cfg: RewardConfig) -> EvalResult:
    """The evaluation to reward after re-evaluating `first` as `second`.

    The re-evaluation wins if it is not a pass or has no speedup (its failure is the honest
    verdict); otherwise the one with the lower speedup wins, the re-evaluation on a tie. The chosen
    result keeps its own profile, so reward and PRS read one consistent measurement.
    """
    s1, s2 = speedup(first, cfg), speedup(second, cfg)
    if not is_pass(second) or s2 is None:
        return second
    if is_pass(first) and s1 is not None and s1 < s2:
        return first
    return second
