"""Which answers become training data: the SFT filter and best-of-n (rejection-sampling) selection.

Both produce rows in TRL's conversational prompt-completion format, which `SFTTrainer` reads as
is: `prompt` is the conversation up to the chosen answer (system, task, and in multi-turn
episodes the earlier attempts with their feedback), `completion` is that one assistant message,
so the loss falls on the chosen answer only (TRL's `completion_only_loss`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kernelgym.export.trajectories import Trajectory
from rewards.config import RewardConfig

SFT_COLUMNS: dict[str, Any] = {
    "prompt": "messages", "completion": "messages", "trajectory_id": "string", "task_id": "string",
    "group_id": "string", "turn": "int64", "reward": "float64", "speedup": "float64", "triton_share": "float64",
    "status": "string",
}


@dataclass(frozen=True)
class SFTFilter:
    """A turn qualifies when it passed (OK, correct, no cheat verdict) and clears both thresholds.

    A speedup or Triton share that was not measured (CPU judging) counts as failing a threshold
    above 0 and as passing a threshold of 0.
    """

    min_triton_share: float = field(default=0.0, metadata={"help": "tau: least share of device time in own Triton"})
    min_speedup: float = field(default=0.0, metadata={"help": "p: least speedup against the reward baseline"})
    reward_config: RewardConfig = field(default_factory=RewardConfig, metadata={"help": "baseline of the speedup"})

    def __post_init__(self) -> None:
        if not 0.0 <= self.min_triton_share <= 1.0:
            raise ValueError(f"SFTFilter.min_triton_share must be in [0, 1], not {self.min_triton_share}")
        if self.min_speedup < 0:
            raise ValueError(f"SFTFilter.min_speedup must be >= 0, not {self.min_speedup}")

    def accepts(self, summary: dict[str, Any]) -> bool:
        """`summary` is `Turn.summary()`."""
        if not summary["passed"] or summary["cheat"]:
            return False
        share, s = summary["triton_share"], summary["speedup"]
        if self.min_triton_share > 0 and (share is None or share < self.min_triton_share):
            return False
        return not (self.min_speedup > 0 and (s is None or s < self.min_speedup))


def sft_rows(trajectories: Iterable[Trajectory], sft_filter: SFTFilter) -> list[dict[str, Any]]:
    """One row per trajectory that has a qualifying turn: its best one (highest answer reward, then earliest)."""
    rows = []
    for t in trajectories:
        best = _best_turn(t, sft_filter)
        if best is not None:
            rows.append(chat_row(t, best, sft_filter.reward_config))
    return rows


def best_of_n_rows(trajectories: Iterable[Trajectory], n: int = 1, min_reward: float | None = None,
                   sft_filter: SFTFilter | None = None) -> list[dict[str, Any]]:
    """Rejection sampling: per group (same prompt), the `n` trajectories whose best answer has the highest
    reward of its own, keeping only answers with reward >= `min_reward` and, when given, accepted by
    `sft_filter`. Answers rank by their own reward, never by the turn's (which under
    `turn_reward="improvement"` is only the gain over earlier turns)."""
    if n < 1:
        raise ValueError(f"best-of-n needs n >= 1, not {n}")
    reward_config = sft_filter.reward_config if sft_filter else RewardConfig()
    groups: dict[str, list[tuple[float, int, Trajectory, int]]] = defaultdict(list)
    for order, t in enumerate(trajectories):
        best = _best_turn(t, sft_filter)
        if best is None:
            continue
        reward = t.turns[best].answer_reward
        if min_reward is None or reward >= min_reward:
            groups[t.group_id].append((reward, order, t, best))
    rows = []
    for group_id in sorted(groups):
        ranked = sorted(groups[group_id], key=lambda x: (-x[0], x[1]))  # highest reward, then first seen
        rows += [chat_row(t, turn, reward_config) for _, _, t, turn in ranked[:n]]
    return rows


def chat_row(trajectory: Trajectory, turn: int, reward_config: RewardConfig | None = None) -> dict[str, Any]:
    """The prompt-completion row of one turn (`SFT_COLUMNS`)."""
    summary = trajectory.turns[turn].summary(reward_config)
    return {"prompt": trajectory.prompt_before(turn),
            "completion": [{"role": "assistant", "content": trajectory.answer(turn)}],
            "trajectory_id": trajectory.trajectory_id, "task_id": trajectory.task_id,
            "group_id": trajectory.group_id, "turn": turn, "reward": summary["answer_reward"],
            "speedup": summary["speedup"], "triton_share": summary["triton_share"], "status": summary["status"]}


def _best_turn(t: Trajectory, sft_filter: SFTFilter | None) -> int | None:
    """Index of the turn whose answer earned the most (earliest on ties) that the filter accepts, or None."""
    best = None
    for k, turn in enumerate(t.turns):
        if sft_filter is not None and not sft_filter.accepts(turn.summary(sft_filter.reward_config)):
            continue
        if best is None or turn.answer_reward > t.turns[best].answer_reward:
            best = k
    return best
