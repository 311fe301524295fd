"""verl: KernelGym as a multi-turn interaction (`verl.interactions.base.BaseInteraction`, verl 0.5-0.8).

How verl's tool agent loop uses an interaction (verl/experimental/agent_loop/tool_agent_loop.py,
0.7.1): `start_interaction(request_id, **interaction_kwargs)` once per rollout, with the
`interaction_kwargs` of the row's `extra_info` (its `name` picks the interaction); after every
assistant turn `generate_response(request_id, messages, **interaction_kwargs)` returns
(terminate, user text, turn score, metrics): the text becomes the next user turn, the score is
appended to the rollout's `turn_scores`, which the reward loop hands to the reward function in
`extra_info` (hence `compute_score` below). The loop never calls `finalize_interaction`, and it
ends a rollout on its length or turn limit without a word, so the adapter holds no server session
between turns (`KernelGymInteraction`).

verl is imported only if installed: without it the class still imports and runs (tests use it so).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelgym.env.adapters.backend import (
    EpisodeBackend,
    episode_reward,
    feedback_text,
    judge_turn,
    last_assistant_text,
    make_backend,
    open_episode,
    task_prompt,
)

try:
    from verl.interactions.base import BaseInteraction as _InteractionBase
except ImportError:  # verl absent, or 0.9+ without interactions
    _InteractionBase = object

INTERACTION_NAME = "kernelgym"
MAX_OPEN_EPISODES = 100_000  # rollouts verl dropped without a word are forgotten past this many


@dataclass
class _Episode:
    task: str
    answer_rewards: list[float] = field(default_factory=list)  # each answer's own reward, sent with the next turn
    rewards: list[float] = field(default_factory=list)  # what each turn earned (verl's turn scores)


class KernelGymInteraction(_InteractionBase):  # type: ignore[misc, valid-type]
    """One interaction object serves every rollout of a worker, each an episode keyed by its request id.

    `config` (the interaction's YAML `config:`): `base_url` of a `kernelgym env serve` server, absent
    for in-process judging. Rows name their task in `extra_info.interaction_kwargs.task`.

    verl ends a rollout on its length or turn limit without telling the interaction, so no server
    session is held between turns: each turn opens one, continues the episode from the earlier
    answers' rewards, and releases it (`judge_turn`). What stays here per running episode is its
    task and rewards; the oldest of more than `max_open_episodes` are forgotten.
    """

    def __init__(self, config: dict[str, Any], backend_factory: Callable[[], EpisodeBackend] | None = None,
                 max_open_episodes: int = MAX_OPEN_EPISODES) -> None:
        if _InteractionBase is not object:
            super().__init__(config)
        self.config = config
        self.name = config.get("name", INTERACTION_NAME)
        base_url = config.get("base_url")
        self._make_backend = backend_factory or (lambda: make_backend(base_url))
        self._episodes: OrderedDict[str, _Episode] = OrderedDict()
        self._max_open = max_open_episodes

    async def start_interaction(self, instance_id: str | None = None, task: str | None = None, **kwargs: Any) -> str:
        """Open an episode on `task` (the row's prompt already holds the task text; the reset here
        only checks the task, and releases its session); returns the episode's id."""
        if not task:
            raise ValueError("interaction_kwargs must name a task: extra_info.interaction_kwargs.task")
        instance_id = instance_id or uuid.uuid4().hex
        await asyncio.to_thread(open_episode, self._make_backend, task)  # blocking calls stay off verl's loop
        self._episodes[instance_id] = _Episode(task)
        while len(self._episodes) > self._max_open:
            self._episodes.popitem(last=False)
        return instance_id

    async def generate_response(self, instance_id: str, messages: list[dict[str, Any]],
                                **kwargs: Any) -> tuple[bool, str, float, dict[str, Any]]:
        """Judge the last assistant message: (done, feedback for the next user turn, turn reward, metrics)."""
        episode = self._episodes.get(instance_id)
        if episode is None:
            raise RuntimeError(f"no running KernelGym episode {instance_id!r}: it ended, was finalized, or was "
                               f"among the oldest of more than {self._max_open} open episodes")
        obs = await asyncio.to_thread(judge_turn, self._make_backend, episode.task, last_assistant_text(messages),
                                      episode.answer_rewards)
        episode.answer_rewards.append(float(obs.metadata.get("answer_reward", obs.reward or 0.0)))
        episode.rewards.append(float(obs.reward or 0.0))
        result = obs.metadata.get("result") or {}
        metrics = {"status": result.get("status"), "turn": obs.metadata.get("turn"),
                   "speedup": result.get("speedup_eager")}
        if obs.done:
            await self.finalize_interaction(instance_id)
        return obs.done, feedback_text(obs), float(obs.reward or 0.0), metrics

    async def calculate_score(self, instance_id: str, **kwargs: Any) -> float:
        """The return so far of a running episode (0.0 for one that is over: its turn scores are verl's)."""
        episode = self._episodes.get(instance_id)
        return episode_reward(episode.rewards) if episode else 0.0

    async def finalize_interaction(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the episode (safe to call twice; it holds no server session)."""
        self._episodes.pop(instance_id, None)

    @property
    def open_episodes(self) -> int:
        return len(self._episodes)


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None,
                  **kwargs: Any) -> float:
    """verl `custom_reward_function`: the episode's return, the sum of the interaction's turn scores
    (the reward loop puts them in `extra_info`; the final text needs no second judging)."""
    return episode_reward(list((extra_info or {}).get("turn_scores") or []))


def dataset_rows(task_ids: list[str]) -> list[dict[str, Any]]:
    """Rows for verl's RL parquet files: the task's first messages as the prompt and the interaction's kwargs."""
    return [{"data_source": INTERACTION_NAME, "prompt": task_prompt(t), "ability": "triton",
             "reward_model": {"style": "rule", "ground_truth": ""}, "agent_name": "tool_agent",
             "extra_info": {"interaction_kwargs": {"name": INTERACTION_NAME, "task": t}}} for t in task_ids]
