"""SkyRL: KernelGym as a SkyRL-Gym text environment (`skyrl_gym.envs.base_text_env.BaseTextEnv`, 0.4).

SkyRL's generator builds one environment per rollout with `skyrl_gym.make(env_class,
env_config=<the skyrl_gym config section of that class>, extras=<the row's other columns, plus the
generator's max_turns>)`, calls `init(prompt)` once, then `step(reply)` after every model turn
until `done`, and `close()`; `step` returns the messages to append, the turn reward, `done` and
metadata. Register the class once per process with `register()`, then name `env_class: kernelgym` in the rows.

skyrl_gym is imported only if installed: without it the class still imports and runs (tests use it so).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kernelgym.env.adapters.backend import EpisodeBackend, judge_turn, make_backend, open_episode, task_prompt

try:
    from skyrl_gym.envs.base_text_env import BaseTextEnv as _TextEnvBase
except ImportError:
    _TextEnvBase = object

ENV_ID = "kernelgym"
TASK_COLUMN = "task"


class KernelGymTextEnv(_TextEnvBase):  # type: ignore[misc, valid-type]
    """One rollout's episode. `env_config` (SkyRL's `environment.skyrl_gym.kernelgym` section):
    `base_url` of a `kernelgym env serve` server, absent for in-process judging. `extras[task]`
    names the task; the row's prompt must be that task's prompt (build rows with `dataset_rows`).

    No server session is held between steps (`judge_turn`): SkyRL skips `close()` when its agent
    loop raises, and a rollout it drops that way then leaves nothing on the server."""

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None,
                 backend_factory: Callable[[], EpisodeBackend] | None = None) -> None:
        if _TextEnvBase is not object:
            super().__init__()
        extras = extras or {}
        self._task = extras.get(TASK_COLUMN)
        if not self._task:
            raise ValueError(f"the row has no {TASK_COLUMN!r} column naming a task (columns: {', '.join(sorted(extras))})")
        base_url = (env_config or {}).get("base_url")
        self._make_backend = backend_factory or (lambda: make_backend(base_url))
        self.turns = 0
        # SkyRL ends a rollout only on `done`, and passes its own turn limit in the extras.
        self.max_turns = int(extras.get("max_turns") or 0)  # 0: the episode's own limit alone
        self._answer_rewards: list[float] = []
        self._last: dict[str, Any] = {}

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Open the episode (the reset only checks the task); the prompt goes to the model unchanged."""
        obs = open_episode(self._make_backend, self._task)
        self._answer_rewards = []
        return prompt, {"task_id": obs.metadata.get("task_id")}

    def step(self, action: str) -> dict[str, Any]:
        """Judge one reply: {observations, reward, done, metadata} (SkyRL's BaseTextEnvStepOutput)."""
        obs = judge_turn(self._make_backend, self._task, action, self._answer_rewards)
        self._answer_rewards.append(float(obs.metadata.get("answer_reward", obs.reward or 0.0)))
        self.turns += 1
        result = obs.metadata.get("result") or {}
        self._last = {"status": result.get("status"), "speedup": result.get("speedup_eager")}
        done = obs.done or 0 < self.max_turns <= self.turns
        return {"observations": [] if done else obs.messages, "reward": float(obs.reward or 0.0), "done": done,
                "metadata": {"turn": obs.metadata.get("turn"), "feedback": obs.metadata.get("feedback", ""),
                             **self._last}}

    def close(self) -> None:
        """Nothing to release: every step released its own backend."""

    def get_metrics(self) -> dict[str, Any]:
        return {"turns": self.turns, "correct": float(self._last.get("status") == "ok")}


def register() -> None:
    """Make `env_class: kernelgym` resolvable by `skyrl_gym.make` in this process."""
    from skyrl_gym.envs.registration import register as skyrl_register

    skyrl_register(id=ENV_ID, entry_point=f"{__name__}:KernelGymTextEnv")


def dataset_rows(task_ids: list[str]) -> list[dict[str, Any]]:
    """Rows for SkyRL's prompt dataset: the task's first messages, the env class and the task column."""
    return [{"prompt": task_prompt(t), "env_class": ENV_ID, TASK_COLUMN: t} for t in task_ids]
