"""Reward functions from `EvalResult` to a scalar, PRS keep-probabilities and outlier handling.

Pure functions over the judge's result type; nothing here imports torch or runs code.
"""

from rewards.config import RewardConfig
from rewards.functions import (
    REWARDS,
    RewardFn,
    cheat_penalty_reward,
    drkernel_reward,
    format_reward,
    get_reward,
    is_cheat,
    is_pass,
    shaped_reward,
    speedup,
    total_reward,
    triton_share,
)
from rewards.outliers import needs_reevaluation, settle_outlier
from rewards.prs import prs_keep_probability, prs_sample

__all__ = [
    "REWARDS",
    "RewardConfig",
    "RewardFn",
    "cheat_penalty_reward",
    "drkernel_reward",
    "format_reward",
    "get_reward",
    "is_cheat",
    "is_pass",
    "needs_reevaluation",
    "prs_keep_probability",
    "prs_sample",
    "settle_outlier",
    "shaped_reward",
    "speedup",
    "total_reward",
    "triton_share",
]
