"""Profiling-based rejection sampling (PRS): drop correct turns whose time is mostly not Triton.

keep_prob = clip((triton_share − τ) / f, 0, 1) for a pass, 0 otherwise (Dr. Kernel: τ=0.3, f=0.1).
Without a profile (CPU runs) the share is 0, so every turn is rejected: turn PRS off there.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from kernelgym.judge.result import EvalResult
from rewards.config import RewardConfig
from rewards.functions import is_pass, triton_share


def prs_keep_probability(result: EvalResult, cfg: RewardConfig) -> float:
    """clip((triton_share − cfg.prs_tau) / cfg.prs_f, 0, 1) for a pass; 0.0 for anything else."""
    if not is_pass(result):
        return 0.0
    return min(1.0, max(0.0, (triton_share(result) - cfg.prs_tau) / cfg.prs_f))


def prs_sample(results: Sequence[EvalResult], cfg: RewardConfig, rng: random.Random) -> list[bool]:
    """One keep flag per result, True with its keep-probability.

    Draws exactly one number from `rng` per result, so a seeded rng gives the same mask every run.
    """
    return [rng.random() < prs_keep_probability(r, cfg) for r in results]
