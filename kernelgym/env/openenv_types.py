"""The KernelGym environment's OpenEnv wire types: action, observation, state.

These are what `kernelgym env serve` publishes at `/schema` and what travels over `/ws`. They
mirror the in-process `KernelObservation` and `EpisodeState` field for field, so a client
(`kernelgym.env.adapters.client`) turns them back into the same objects `KernelEnv` returns and an
adapter cannot tell a served episode from an in-process one. Needs the `openenv` package.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

from kernelgym.env.episode import EpisodeState, KernelObservation


class KernelGymAction(Action):
    """One answer. `answer` is the only required field, so clients that map a raw model reply onto
    a single-field action (verifiers' OpenEnv taskset) need no glue."""

    answer: str = Field(description="the model's reply: text with a ```python block, or plain code")


class KernelGymObservation(Observation):
    """`messages` to append to the conversation (system + first user turn after reset, the feedback
    turn after a step that does not end the episode, nothing once done); `reward` is None after
    reset; `metadata` is KernelEnv's: task_id and turn, plus result, feedback and returns_to_go after a step."""

    messages: list[dict[str, str]] = Field(default_factory=list, description="chat messages to append")

    @classmethod
    def from_env(cls, obs: KernelObservation) -> "KernelGymObservation":
        return cls(messages=obs.messages, done=obs.done, reward=obs.reward, metadata=obs.metadata)

    def to_env(self) -> KernelObservation:
        return KernelObservation(messages=list(self.messages), done=self.done,
                                 reward=None if self.reward is None else float(self.reward),
                                 metadata=dict(self.metadata))


class KernelGymState(State):
    """The session's episode: `step_count` answers judged so far, their rewards and (once done) the
    reward-to-go of each turn. `done` is true before the first reset."""

    task_id: str = Field(default="", description="task of the current episode")
    done: bool = Field(default=True, description="no step is allowed until the next reset")
    rewards: list[float] = Field(default_factory=list, description="reward of each turn so far")
    answer_rewards: list[float] = Field(default_factory=list, description="each answer's own reward (a turn's "
                                        "reward is what it adds, EnvConfig.turn_reward)")
    returns_to_go: list[float] = Field(default_factory=list, description="G_t of each turn (gamma = 1)")

    @classmethod
    def from_env(cls, state: EpisodeState, episode_id: str | None) -> "KernelGymState":
        return cls(episode_id=episode_id, step_count=state.turn, task_id=state.task_id, done=state.done,
                   rewards=list(state.rewards), answer_rewards=list(state.answer_rewards),
                   returns_to_go=state.returns_to_go())


def observation_from_wire(payload: dict[str, Any]) -> KernelGymObservation:
    """The observation inside a server reply's `data` (OpenEnv moves reward and done beside it)."""
    fields = dict(payload.get("observation") or {})
    return KernelGymObservation(**fields, reward=payload.get("reward"), done=bool(payload.get("done", False)))
