"""verl: KernelGym episodes in verl's tool agent loop, as an interaction (verl 0.6-0.7) or a tool (0.7-0.9).

What each verl offers, read from its source (verl/experimental/agent_loop/tool_agent_loop.py):
  * 0.5: `verl.interactions` exists, but only the SGLang rollout uses it; the tool agent loop has none.
  * 0.6, 0.7: the tool agent loop runs an interaction (`multi_turn.interaction_config_path`):
    `start_interaction(request_id, **interaction_kwargs)` once per rollout, with the
    `interaction_kwargs` of the row's `extra_info` (its `name` picks the interaction); after every
    assistant turn `generate_response(request_id, messages, **interaction_kwargs)` returns
    (terminate, user text, turn score, metrics): the text becomes the next user turn, the score is
    appended to the rollout's `turn_scores`. `KernelGymInteraction`.
  * 0.8, 0.9: no `verl.interactions` and no `interaction_config_path`. Tools remain
    (`multi_turn.tool_config_path`): for every tool call the loop runs `create(create_kwargs=...)`,
    `execute(instance_id, arguments, agent_data=...)` and `release(instance_id)`; the reward is
    appended to `tool_rewards` and the response text becomes a `tool` message. (0.7 passes
    `agent_data` too; 0.6 does not.) `KernelGymTool`.
Both reach the reward function in `extra_info` (the loop's `tool_extra_fields`), hence `compute_score`.

The loop never calls `finalize_interaction`, and it ends a rollout on its length or turn limit
without a word, so neither class holds a server session between turns (`backend.judge_turn`).
Outside its versions a class refuses to start (`VerlVersionError`) rather than run on a base class
that verl never calls. verl is imported only if installed: without it both classes still import
and run (tests use them so).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelgym.env.adapters.backend import (
    EPISODE_OVER,
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
except ImportError:  # verl absent, or 0.8+ without interactions
    _InteractionBase = object
try:
    from verl.tools.base_tool import BaseTool as _ToolBase
except ImportError:
    _ToolBase = object

INTERACTION_NAME = "kernelgym"
TOOL_NAME = "submit_kernel"
# [lowest, first unsupported) minor versions, from each verl's tool agent loop (module docstring).
INTERACTION_VERSIONS = ((0, 6), (0, 8))
TOOL_VERSIONS = ((0, 7), (0, 10))


class VerlVersionError(RuntimeError):
    """The installed verl does not offer what an adapter class needs."""


def installed_verl() -> str | None:
    """The installed verl's version, or None without verl."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("verl")
    except PackageNotFoundError:
        return None


def check_verl(what: str, supported: tuple[tuple[int, int], tuple[int, int]], instead: str,
               found: str | None = None) -> None:
    """Raise VerlVersionError when verl is installed at a version outside `supported` for `what`."""
    found = found if found is not None else installed_verl()
    if found is None:
        return
    parts = (found.split(".") + ["0"])[:2]
    minor = tuple(int("".join(ch for ch in p if ch.isdigit()) or 0) for p in parts)
    (lo, hi) = supported
    if not lo <= minor < hi:
        raise VerlVersionError(f"{what} needs verl >={lo[0]}.{lo[1]},<{hi[0]}.{hi[1]}; verl {found} is installed. "
                               f"{instead}")
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
        check_verl("KernelGymInteraction (multi_turn.interaction_config_path)", INTERACTION_VERSIONS,
                   "verl 0.8 removed interactions: use KernelGymTool (multi_turn.tool_config_path) there.")
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


TOOL_SCHEMA: dict[str, Any] = {"type": "function", "function": {
    "name": TOOL_NAME,
    "description": "Submit a complete solution to the judge: Python source defining class ModelNew with "
                   "@triton.jit kernels. Returns the judge's feedback: correctness, errors, speedup.",
    "parameters": {"type": "object", "required": ["code"], "properties": {
        "code": {"type": "string", "description": "The full Python source of the solution."}}}}}
TOOL_NOTE = (f"\n\nSubmit each attempt by calling the `{TOOL_NAME}` tool with your complete code; the judge's "
             "feedback comes back as the tool's result, and you may then submit an improved version.")


@dataclass
class _TextResponse:
    """What `execute` returns without verl installed, in the shape of verl's ToolResponse."""

    text: str


def _tool_response(text: str) -> Any:
    if _ToolBase is object:
        return _TextResponse(text)
    from verl.tools.schemas import ToolResponse

    return ToolResponse(text=text)


ONE_AT_A_TIME = ("Not judged: submit one answer at a time. Another submit_kernel call of this turn is being "
                 "judged; its result is what counts.")

class KernelGymTool(_ToolBase):  # type: ignore[misc, valid-type]
    """The `submit_kernel` tool (verl 0.7-0.9, `multi_turn.tool_config_path`): each call judges one answer
    as the next turn of the rollout's episode on the task of its row's `tools_kwargs`.

    verl builds and releases a tool instance around every call, so the episode lives in the rollout's
    own `agent_data.extra_fields["kernelgym"]` (each answer's reward, and whether it is over), which
    verl drops with the rollout; the server session lives for one call. `config` (the tool's YAML
    `config:`): `type: native`, and `base_url` of a `kernelgym env serve` server (absent: in process)."""

    def __init__(self, config: dict[str, Any], tool_schema: Any = None,
                 backend_factory: Callable[[], EpisodeBackend] | None = None) -> None:
        check_verl("KernelGymTool (multi_turn.tool_config_path)", TOOL_VERSIONS,
                   "verl 0.6 passes tools no agent_data: use KernelGymInteraction there.")
        config = dict(config)
        base_url = config.get("base_url")
        self._make_backend = backend_factory or (lambda: make_backend(base_url))
        self._tasks: dict[str, str] = {}  # instance id -> task, from create to release (one call)
        if _ToolBase is not object:
            super().__init__(config, tool_schema)
        else:
            self.config, self.tool_schema, self.name = config, TOOL_SCHEMA, TOOL_NAME

    def get_openai_tool_schema(self) -> Any:
        from verl.tools.schemas import OpenAIFunctionToolSchema

        return OpenAIFunctionToolSchema.model_validate(TOOL_SCHEMA)

    async def create(self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None,
                     **kwargs: Any) -> tuple[str, Any]:
        task = (create_kwargs or {}).get("task")
        if not task:
            raise ValueError(f"the row's extra_info.tools_kwargs.{TOOL_NAME}.create_kwargs must name a task")
        instance_id = instance_id or uuid.uuid4().hex
        self._tasks[instance_id] = str(task)
        return instance_id, _tool_response("")

    async def execute(self, instance_id: str, parameters: dict[str, Any], agent_data: Any = None,
                      **kwargs: Any) -> tuple[Any, float, dict[str, Any]]:
        """Judge `parameters["code"]`: (feedback, the turn's reward, metrics)."""
        if agent_data is None:
            raise VerlVersionError("verl passed no agent_data to the tool (verl 0.6): use KernelGymInteraction")
        episode = agent_data.extra_fields.setdefault("kernelgym", {"answer_rewards": [], "done": False})
        if episode["done"]:
            return _tool_response(EPISODE_OVER.strip()), 0.0, {"status": None, "turn": len(episode["answer_rewards"])}
        if episode.get("judging"):
            # verl runs one turn's tool calls together: judged side by side against the same earlier
            # rewards, each copy of an answer would be paid in full (and past max_turns)
            return _tool_response(ONE_AT_A_TIME), 0.0, {"status": None, "turn": len(episode["answer_rewards"])}
        episode["judging"] = True  # set before the first await: the event loop runs no sibling call in between
        try:
            obs = await asyncio.to_thread(judge_turn, self._make_backend, self._tasks[instance_id],
                                          str(parameters.get("code", "")), episode["answer_rewards"])
        finally:
            episode["judging"] = False
        episode["answer_rewards"].append(float(obs.metadata.get("answer_reward", obs.reward or 0.0)))
        episode["done"] = bool(obs.done)
        result = obs.metadata.get("result") or {}
        text = obs.metadata.get("feedback", "") + (EPISODE_OVER if obs.done else "")
        return _tool_response(text), float(obs.reward or 0.0), {
            "status": result.get("status"), "turn": obs.metadata.get("turn"), "speedup": result.get("speedup_eager")}

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        self._tasks.pop(instance_id, None)


def tool_dataset_rows(task_ids: list[str]) -> list[dict[str, Any]]:
    """Rows for verl's RL parquet files with `KernelGymTool`: the task's first messages (plus how to
    submit) as the prompt, and the tool's create_kwargs naming the task."""
    rows = []
    for t in task_ids:
        prompt = task_prompt(t)
        prompt[-1] = {**prompt[-1], "content": prompt[-1]["content"] + TOOL_NOTE}
        rows.append({"data_source": INTERACTION_NAME, "prompt": prompt, "ability": "triton",
                     "reward_model": {"style": "rule", "ground_truth": ""}, "agent_name": "tool_agent",
                     "extra_info": {"tools_kwargs": {TOOL_NAME: {"create_kwargs": {"task": t}}}}})
    return rows


def compute_score(data_source: str, solution_str: str, ground_truth: Any, extra_info: dict[str, Any] | None = None,
                  **kwargs: Any) -> float:
    """verl `custom_reward_function`: the episode's return, the sum of the interaction's turn scores
    or of the tool's rewards (the reward loop puts both in `extra_info`; nothing is judged twice)."""
    info = extra_info or {}
    return episode_reward([*(info.get("turn_scores") or []), *(info.get("tool_rewards") or [])])


def dataset_rows(task_ids: list[str]) -> list[dict[str, Any]]:
    """Rows for verl's RL parquet files: the task's first messages as the prompt and the interaction's kwargs."""
    return [{"data_source": INTERACTION_NAME, "prompt": task_prompt(t), "ability": "triton",
             "reward_model": {"style": "rule", "ground_truth": ""}, "agent_name": "tool_agent",
             "extra_info": {"interaction_kwargs": {"name": INTERACTION_NAME, "task": t}}} for t in task_ids]
