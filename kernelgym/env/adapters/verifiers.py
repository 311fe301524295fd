"""verifiers (0.4, `verifiers.v1`): KernelGym episodes as a verifiers taskset, `vf-eval kernelgym-verifiers`.

The taskset and its episode loop live in the top-level package `kernelgym_verifiers` (verifiers finds a
taskset by importing its id as a module, and an id cannot name a submodule); this module holds what they
need without importing verifiers, so the trainer's side can build configs anywhere.

Why not verifiers' built-in OpenEnv taskset (verifiers/v1/tasksets/openenv/taskset.py, 0.4.0), which
drives our server unchanged? Two of its ways cost an episode its score. Its client is
`GenericEnvClient(base_url=...)` with OpenEnv's default 60 s per reply, which time queued for a judge
slot counts against, so each reset asks the server to reply within `REPLY_WITHIN_S`: an answer not judged
by then comes back as a pending turn asking for `wait`. That taskset shows the pending turn to the model,
which spends one of its `max_turns` on `wait`, so an answer judged late in the episode was never
collected and scored 0 with no error. And every user turn is the JSON of our observation and action
schema, so the system prompt reached the model inside a 4.7 KB JSON user message. Our loop
(`kernelgym_verifiers.KernelGymEnv`) collects a pending answer itself (`step_collecting`) before the
model's next turn, and shows the model the observation's messages as they are: the system prompt as a
system message, then the task, then each feedback turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

# Under verifiers' 60 s per reply (OpenEnv's EnvClient default), leaving room for the network.
REPLY_WITHIN_S = 50.0
DEFAULT_URL = "http://127.0.0.1:8001"  # `kernelgym env serve`
COLLECT = "wait"  # the action that collects a pending answer (the server judges nothing for it)


def taskset_config(base_url: str, tasks: Sequence[str] | None = None,
                   reply_within_s: float = REPLY_WITHIN_S) -> dict[str, Any]:
    """A KernelGym server and one reset per task id, or, with no ids, one reset without a task (the server
    draws one at random for each rollout). Every reset sets the reply deadline and the `chat` view (the
    messages alone, no judge result). The same fields configure verifiers' built-in OpenEnv taskset."""
    if tasks is not None and not tasks:
        raise ValueError("tasks is empty: pass task ids, or None to let the server draw tasks")
    if not reply_within_s > 0:
        raise ValueError(f"reply_within_s must be positive, not {reply_within_s}")
    each = {"reply_within_s": reply_within_s, "view": "chat"}
    return {"base_url": base_url, "resets": [{"task": t, **each} for t in tasks] if tasks else [each]}


class StepResult(Protocol):
    observation: dict[str, Any]
    reward: float | None
    done: bool


class StepClient(Protocol):
    async def step(self, action: dict[str, Any]) -> StepResult: ...


def is_pending(result: StepResult) -> bool:
    """Whether the server answered before judging (its `chat` view keeps this one metadata key)."""
    return not result.done and bool((result.observation.get("metadata") or {}).get("pending"))


async def step_collecting(client: StepClient, answer: str) -> tuple[StepResult, float]:
    """Judge `answer` on an OpenEnv client of a KernelGym session; while the server answers pending, collect
    with `wait` steps that no model sees. Returns the judged step and the reward of all those steps (the
    pending turn pays the reward's floor ahead, the collecting step the rest)."""
    result = await client.step({"answer": answer})
    reward = float(result.reward or 0.0)
    while is_pending(result):  # each round ends within reply_within_s; the judge's own timeout ends them all
        result = await client.step({"answer": COLLECT})
        reward += float(result.reward or 0.0)
    return result, reward


def load_taskset(base_url: str = DEFAULT_URL, tasks: Sequence[str] | None = None) -> Any:
    """`kernelgym_verifiers.KernelGymTaskset` on a KernelGym server (needs `verifiers>=0.4`)."""
    try:
        from kernelgym_verifiers import KernelGymTaskset, KernelGymTasksetConfig
    except ImportError as e:
        raise ImportError("the verifiers adapter needs verifiers>=0.4 (pip install 'kernelgym[verifiers]')") from e
    return KernelGymTaskset(KernelGymTasksetConfig(base_url=base_url, tasks=list(tasks or [])))
