"""Where an adapter's episodes run, and what every adapter computes the same way.

An `EpisodeBackend` is anything with `KernelEnv`'s `reset(task)` and `step(answer)`: a `KernelEnv`
in the trainer's process, or a `RemoteKernelEnv` session on a `kernelgym env serve` server.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kernelgym.env.episode import KernelObservation

REWARD_MODES = ("sum", "last", "max")


class EpisodeBackend(Protocol):
    def reset(self, task: str, earlier_rewards: Sequence[float] = ()) -> KernelObservation: ...

    def step(self, answer: str) -> KernelObservation: ...


def make_backend(base_url: str | None = None, **kernel_env_kwargs: Any) -> EpisodeBackend:
    """A session on the server at `base_url` when given, else an in-process `KernelEnv(**kernel_env_kwargs)`."""
    if base_url:
        if kernel_env_kwargs:
            raise ValueError(f"{sorted(kernel_env_kwargs)} configure an in-process KernelEnv; "
                             "a server is configured where it is started (kernelgym env serve)")
        from kernelgym.env.adapters.client import RemoteKernelEnv

        return RemoteKernelEnv(base_url)
    from kernelgym.env.environment import KernelEnv

    return KernelEnv(**kernel_env_kwargs)


def close_backend(backend: EpisodeBackend | None) -> None:
    """Release a backend's server session, if it has one (an in-process KernelEnv holds nothing)."""
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def open_episode(make: Callable[[], EpisodeBackend], task: str) -> KernelObservation:
    """Check that `task` can be played (the server knows it) and return its reset observation; the
    backend is released before returning."""
    backend = make()
    try:
        return backend.reset(task)
    finally:
        close_backend(backend)


def judge_turn(make: Callable[[], EpisodeBackend], task: str, answer: str,
               earlier_rewards: Sequence[float]) -> KernelObservation:
    """One turn of an episode that holds no backend between turns: a fresh backend continues the
    episode from its earlier answers' own rewards (`KernelEnv.reset(earlier_rewards=...)`), judges
    `answer`, and is released whatever happens. A framework that drops a rollout without telling
    the adapter (verl on its length limit, SkyRL on an exception) then leaves no server session behind."""
    backend = make()
    try:
        backend.reset(task, earlier_rewards=list(earlier_rewards))
        return backend.step(answer)
    finally:
        close_backend(backend)


def episode_reward(rewards: Sequence[float | None], mode: str = "sum") -> float:
    """One scalar for a whole episode: `sum` (the return G_0 with gamma = 1, what TRLOO's first-turn
    advantage starts from), `last` (the final answer's reward) or `max`; 0.0 before any answer."""
    if mode not in REWARD_MODES:
        raise ValueError(f"episode reward mode must be one of {REWARD_MODES}, not {mode!r}")
    values = [float(r) for r in rewards if r is not None]
    if not values:
        return 0.0
    return {"sum": sum, "last": lambda v: v[-1], "max": max}[mode](values)


def first_user_text(obs: KernelObservation) -> str:
    """The task prompt of a reset observation (its system message is the dataset's business)."""
    return next(m["content"] for m in obs.messages if m["role"] == "user")


EPISODE_OVER = "\n\nThe episode is over: no further answer is judged."


def feedback_text(obs: KernelObservation) -> str:
    """The next user turn of a chat after an answer: the feedback turn of the prompt templates, or the
    bare feedback once the episode is over (there is no next answer to ask for)."""
    if obs.messages:
        return obs.messages[-1]["content"]
    return obs.metadata.get("feedback", "") + EPISODE_OVER


def last_assistant_text(messages: Sequence[dict[str, Any]]) -> str:
    """The content of the last assistant message ('' if there is none)."""
    for m in reversed(messages):
        if m.get("role") == "assistant":
            return str(m.get("content") or "")
    return ""


def task_prompt(task_id: str) -> list[dict[str, str]]:
    """The first messages of an episode on `task_id` (system and user turn, as `reset` makes them
    with the default templates), for datasets whose prompt column must already hold the task."""
    from kernelgym.env.prompts import first_messages, load_templates
    from kernelgym.tasks.loaders import resolve_tasks

    tasks = resolve_tasks(task_id)
    if len(tasks) != 1:
        raise ValueError(f"task spec {task_id!r} names {len(tasks)} tasks; a row needs exactly one")
    return first_messages(tasks[0], load_templates())
