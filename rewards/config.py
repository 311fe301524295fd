"""Reward configuration: one dataclass, every field documented, validated on construction."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# The rewards a config may name; `rewards.functions.REWARDS` maps each to its function (checked there).
REWARD_NAMES = ("drkernel", "shaped", "cheat_penalty")
BASELINES = ("eager", "compile")


@dataclass
class RewardConfig:
    """Which reward to compute and its constants. Defaults reproduce Dr. Kernel's reward and PRS."""

    name: str = field(default="drkernel", metadata={"help": "reward function, a key of rewards.REWARDS"})
    speedup_cap: float = field(default=3.0, metadata={"help": "speedups above this earn no more reward"})
    baseline: str = field(default="eager", metadata={"help": "speedup against the eager reference or torch.compile"})
    cheat_penalty: float = field(
        default=-1.0, metadata={"help": "reward of a cheat in the cheat_penalty and shaped rewards (< 0)"}
    )
    stage_penalty_compile: float = field(
        default=-0.6, metadata={"help": "shaped: invalid answer or compile error (lowest failure stage)"}
    )
    stage_penalty_runtime: float = field(
        default=-0.4, metadata={"help": "shaped: runtime error, timeout, crash or out of memory"}
    )
    stage_penalty_wrong_output: float = field(
        default=-0.2, metadata={"help": "shaped: ran but outputs did not match (highest failure stage, < 0)"}
    )
    prs_tau: float = field(default=0.3, metadata={"help": "PRS: Triton share at which keep-probability starts to rise"})
    prs_f: float = field(default=0.1, metadata={"help": "PRS: share above prs_tau at which keep-probability reaches 1"})
    outlier_threshold: float = field(
        default=10.0, metadata={"help": "speedups above this are re-evaluated before they are rewarded (inf: never)"}
    )
    format_weight: float = field(
        default=0.0, metadata={"help": "weight of format_reward added by total_reward (0: off)"}
    )

    def __post_init__(self) -> None:
        if self.name not in REWARD_NAMES:
            raise ValueError(f"RewardConfig.name must be one of {', '.join(sorted(REWARD_NAMES))}, not {self.name!r}")
        if self.baseline not in BASELINES:
            raise ValueError(f"RewardConfig.baseline must be eager or compile, not {self.baseline!r}")
        if not (0 < self.speedup_cap < math.inf):
            raise ValueError(f"RewardConfig.speedup_cap must be a finite number > 0, not {self.speedup_cap!r}")
        if not self.cheat_penalty < 0:
            raise ValueError(f"RewardConfig.cheat_penalty must be < 0 (a cheat must cost), not {self.cheat_penalty!r}")
        if not (self.stage_penalty_compile < self.stage_penalty_runtime < self.stage_penalty_wrong_output < 0):
            raise ValueError(
                "RewardConfig stage penalties must rise with the stage reached and stay below a correct answer's "
                "reward: stage_penalty_compile < stage_penalty_runtime < stage_penalty_wrong_output < 0, got "
                f"{self.stage_penalty_compile}, {self.stage_penalty_runtime}, {self.stage_penalty_wrong_output}"
            )
        if self.name == "shaped" and not self.cheat_penalty <= self.stage_penalty_compile:
            raise ValueError(
                "RewardConfig.cheat_penalty must be <= stage_penalty_compile for the shaped reward, so a cheat "
                f"never beats an honest failure; got {self.cheat_penalty} > {self.stage_penalty_compile}"
            )
        if not (0 <= self.prs_tau < 1):
            raise ValueError(f"RewardConfig.prs_tau must be in [0, 1), not {self.prs_tau!r}")
        if not (0 < self.prs_f < math.inf):
            raise ValueError(f"RewardConfig.prs_f must be a finite number > 0, not {self.prs_f!r}")
        if not self.outlier_threshold > 0:
            raise ValueError(f"RewardConfig.outlier_threshold must be > 0, not {self.outlier_threshold!r}")
        if not (0 <= self.format_weight < math.inf):
            raise ValueError(f"RewardConfig.format_weight must be a finite number >= 0, not {self.format_weight!r}")

    @property
    def floor(self) -> float:
        """The least reward one answer can earn under this configuration (drkernel: 0; with
        penalties: the cheat penalty, the lowest of them)."""
        return 0.0 if self.name == "drkernel" else min(0.0, self.cheat_penalty, self.stage_penalty_compile)
