"""KernelGym as a verifiers 0.4 taskset: `vf-eval kernelgym-verifiers` (docs/ENVIRONMENT.md, "verifiers 0.4").

A top-level package because verifiers resolves a taskset id by importing it as a module (`kernelgym-verifiers`
-> `kernelgym_verifiers`) and takes the `Taskset`, `Env` and config classes this module exports. Each task is
one reset of a running KernelGym server (`kernelgym env serve`); each episode is `KernelGymEnv.run`: the
observation's messages go to the model as they are (system prompt, task, then each feedback turn), every
reply is judged as one answer, and an answer the server has not judged within its reply deadline is
collected here, never through a model turn (`kernelgym.env.adapters.verifiers.step_collecting`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import verifiers.v1 as vf
from pydantic import Field, field_validator
from verifiers.v1.harnesses.null import NullHarnessConfig
from verifiers.v1.runtimes import SubprocessConfig

from kernelgym.env.adapters.verifiers import DEFAULT_URL, REPLY_WITHIN_S, step_collecting, taskset_config

REWARD_NAME = "kernelgym_reward"


class KernelGymData(vf.TaskData):
    base_url: str
    reset: dict[str, Any]


class KernelGymTask(vf.Task[KernelGymData]):
    pass


class KernelGymTasksetConfig(vf.TasksetConfig):
    base_url: str = DEFAULT_URL
    """The KernelGym environment server (`kernelgym env serve`)."""
    tasks: list[str] = Field(default_factory=list)
    """Task ids served there, one task each (a list, or on the command line `relu,softmax`); empty: one task
    for which the server draws a task per rollout."""
    reply_within_s: float = Field(REPLY_WITHIN_S, gt=0)
    """The server answers every step within this (a pending turn when the judge is busy, collected
    without a model turn); under OpenEnv's 60 s client timeout."""


    @field_validator("tasks", mode="before")
    @classmethod
    def _comma_separated(cls, value: Any) -> Any:
        # verifiers' command line hands a list field its text as is (`--env.taskset.tasks relu,softmax`)
        return [t.strip() for t in value.split(",") if t.strip()] if isinstance(value, str) else value


class KernelGymTaskset(vf.Taskset[KernelGymTask, KernelGymTasksetConfig]):
    def load(self) -> Iterator[KernelGymTask]:
        config = self.config
        resets = taskset_config(config.base_url, config.tasks or None, config.reply_within_s)["resets"]
        for reset in resets:
            yield KernelGymTask(KernelGymData(name=reset.get("task", "random task"), prompt=None,
                                              base_url=config.base_url, reset=reset), config.task)


class KernelGymEnvConfig(vf.EnvConfig):
    # The model's seat: a plain chat loop (no tools; the server judges the reply), run on this host.
    # verifiers' own defaults, the bash harness in a Prime sandbox, need a Prime login and run code.
    player: vf.AgentConfig = vf.AgentConfig(harness=NullHarnessConfig(id="null"), runtime=SubprocessConfig())


class KernelGymEnv(vf.Env[KernelGymEnvConfig]):
    async def run(self, task: KernelGymTask, agents: Any) -> None:
        """One episode: reset, then model turn and judged step until the server says done or the seat's
        own limits end the exchange. The score is the sum of the step rewards (the episode's return)."""
        from openenv import GenericEnvClient

        score = 0.0
        async with GenericEnvClient(base_url=task.data.base_url) as client:
            result = await client.reset(**task.data.reset)
            async with agents.player.interaction(task) as interaction:
                while not result.done:
                    segment = await interaction.turn(result.observation["messages"])
                    if segment.terminated:
                        break
                    result, reward = await step_collecting(client, segment.last_reply)
                    score += reward
        interaction.trace.record_reward(REWARD_NAME, score)


__all__ = ["KernelGymEnv", "KernelGymEnvConfig", "KernelGymTaskset", "KernelGymTasksetConfig"]
