"""What an episode hands back: the observation of each reset and step, and the episode's state.

Kept apart from `environment.py` so that clients of a served environment (the adapters,
`RemoteKernelEnv`) use the same types without importing the judge, torch or triton.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kernelgym.judge.result import EvalResult


@dataclass
class KernelObservation:
    """What the policy sees: the messages to append, and the outcome of the last answer."""

    messages: list[dict[str, str]]
    done: bool = False
    reward: float | None = None  # None after reset
    # after reset: "task_id", "turn"; after a step: "result" (the EvalResult as a dict), "feedback", "turn",
    # "answer_reward" (the answer's own reward; `reward` is what the turn earns, EnvConfig.turn_reward),
    # "returns_to_go" (once done)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class EpisodeState:
    """The episode so far: per-turn rewards and results, and the reward-to-go of each turn."""

    task_id: str = ""
    turn: int = 0
    done: bool = True
    rewards: list[float] = field(default_factory=list)
    results: list[EvalResult] = field(default_factory=list)
    answer_rewards: list[float] = field(default_factory=list)  # each answer's own reward, before turn_reward

    def returns_to_go(self, gamma: float = 1.0) -> list[float]:
        """G_t = r_t + gamma * G_{t+1} for every turn taken (what TRLOO's advantages start from)."""
        out, g = [], 0.0
        for r in reversed(self.rewards):
            g = r + gamma * g
            out.append(g)
        return out[::-1]
