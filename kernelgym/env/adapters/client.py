"""The client side of `kernelgym env serve`: OpenEnv's WebSocket client, typed for KernelGym.

`KernelGymClient` is an `openenv.core.EnvClient` (async, `.sync()` for blocking use) with our
action/observation/state types. `RemoteKernelEnv` wraps it in `KernelEnv`'s own interface
(`reset(task)`, `step(answer)`, `state`) returning the same `KernelObservation`, so every adapter
runs an episode the same way in process or against a server.
"""

from __future__ import annotations

import os
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult

from kernelgym.env.episode import KernelObservation
from kernelgym.env.openenv_types import KernelGymAction, KernelGymObservation, KernelGymState, observation_from_wire

# OpenEnv's client gives up on a reply after 60 s by default; one judge call may take up to
# JudgeConfig.timeout_s (300 s by default) plus queueing behind other sessions' judge calls.
DEFAULT_MESSAGE_TIMEOUT_S = 900.0
TOKEN_ENV = "KERNELGYM_TOKEN"


class KernelGymClient(EnvClient[KernelGymAction, KernelGymObservation, KernelGymState]):
    """One WebSocket session on a KernelGym server (one `KernelEnv` there)."""

    def _step_payload(self, action: KernelGymAction) -> dict[str, Any]:
        return action.model_dump()

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[KernelGymObservation]:
        obs = observation_from_wire(payload)
        return StepResult(observation=obs, reward=obs.reward, done=obs.done, metadata=payload.get("metadata"))

    def _parse_state(self, payload: dict[str, Any]) -> KernelGymState:
        return KernelGymState(**payload)


class RemoteKernelEnv:
    """`KernelEnv`'s interface over a server session (`token`: the server's, default $KERNELGYM_TOKEN).
    Server-side errors (step after done, unknown task) raise `RuntimeError` with the server's
    message, as `KernelEnv`'s `EnvError` (a RuntimeError) does."""

    def __init__(self, base_url: str, token: str | None = None, message_timeout_s: float = DEFAULT_MESSAGE_TIMEOUT_S,
                 connect_timeout_s: float = 10.0) -> None:
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._client = KernelGymClient(base_url=base_url, message_timeout_s=message_timeout_s,
                                       connect_timeout_s=connect_timeout_s,
                                       headers={"Authorization": f"Bearer {token}"} if token else None).sync()
        self._client.connect()

    def reset(self, task: str | None = None, **kwargs: Any) -> KernelObservation:
        """Start an episode on task id `task` (None: the server draws one); `kwargs` are the server's
        other reset arguments (index, split, seed, episode_id, earlier_rewards). After the server
        closed an idle session, this opens a new one (OpenEnv's client reconnects)."""
        if task is not None:
            kwargs["task"] = task
        if not kwargs.get("earlier_rewards"):
            kwargs.pop("earlier_rewards", None)
        return self._client.reset(**kwargs).observation.to_env()

    def step(self, answer: str) -> KernelObservation:
        """Judge one answer on the server."""
        return self._client.step(KernelGymAction(answer=answer)).observation.to_env()

    @property
    def state(self) -> KernelGymState:
        return self._client.state()

    def close(self) -> None:
        """End the session (the server frees its KernelEnv)."""
        self._client.close()

    def __enter__(self) -> "RemoteKernelEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
