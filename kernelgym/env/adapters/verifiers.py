"""verifiers (0.4, `verifiers.v1`): its built-in OpenEnv taskset runs KernelGym episodes unchanged.

How that taskset drives a server (verifiers/v1/tasksets/openenv/taskset.py, 0.4.0): one task per
entry of `resets`, each passed as keyword arguments to the server's `reset`; every model reply
becomes the action, and since our action has one required field (`answer`) the raw reply, fences
stripped when it is wholly fenced, is the answer; the user turn it shows the model is the JSON of
our observation and our action schema, so every reset asks for the `chat` view (the messages alone:
the system prompt and task once, then each feedback turn once, without the judge result); the episode's score is the sum of the step rewards. Its
client is `GenericEnvClient(base_url=...)` with OpenEnv's default 60 s per reply, which no config
changes and which time queued for a judge slot counts against; on a timeout the episode fails. So
every reset asks the server to reply within `REPLY_WITHIN_S`: an answer not judged by then comes
back as a pending turn (reward 0) asking the model to reply `wait`, and that reply collects the result.
All this module adds is the config that names our tasks and sets that deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# Under verifiers' 60 s per reply (OpenEnv's EnvClient default), leaving room for the network.
REPLY_WITHIN_S = 50.0


def taskset_config(base_url: str, tasks: Sequence[str] | None = None) -> dict[str, Any]:
    """`OpenEnvConfig` fields for a KernelGym server: one reset per task id, or, with no ids, one reset
    without a task (the server draws one at random for each rollout). Every reset sets the reply deadline
    and the `chat` view: the model is shown the observation's JSON, which then holds the messages alone."""
    if tasks is not None and not tasks:
        raise ValueError("tasks is empty: pass task ids, or None to let the server draw tasks")
    each = {"reply_within_s": REPLY_WITHIN_S, "view": "chat"}
    return {"base_url": base_url, "resets": [{"task": t, **each} for t in tasks] if tasks else [each]}


def load_taskset(base_url: str, tasks: Sequence[str] | None = None) -> Any:
    """verifiers' `OpenEnvTaskset` on a KernelGym server (needs `verifiers>=0.4`)."""
    try:
        from verifiers.v1.tasksets.openenv import OpenEnvConfig, OpenEnvTaskset
    except ImportError as e:
        raise ImportError("the verifiers adapter needs verifiers>=0.4 (pip install verifiers)") from e
    return OpenEnvTaskset(OpenEnvConfig(**taskset_config(base_url, tasks)))
