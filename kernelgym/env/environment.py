"""The multi-turn kernel-writing environment, in process.

Follows the shape of OpenEnv's `Environment` contract: `reset()` and `step()` each return one
observation that carries `done`, `reward` and `metadata`; `state` describes the episode. One
episode is one task: the first observation holds the prompt messages, every step judges one
answer and returns the feedback messages for the next turn. The OpenEnv WebSocket server wraps
this class (issue 5, later part).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kernelgym.env.episode import EpisodeState, KernelObservation
from kernelgym.env.feedback import render_feedback
from kernelgym.env.prompts import PromptTemplates, feedback_messages, first_messages, load_templates
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult
from kernelgym.tasks.task import Task, TaskError
from rewards.config import RewardConfig
from rewards.functions import get_reward, is_pass, speedup

JudgeFn = Callable[[Task, str, JudgeConfig], EvalResult]
STOP_RULES = ("never", "correct", "speedup")
# How a turn's reward relates to the judged answer's reward (docs/ENVIRONMENT.md, "Turn rewards").
TURN_REWARDS = ("improvement", "absolute")


class EnvError(RuntimeError):
    """A call the episode's state does not allow (step before reset, step after done)."""


@dataclass
class EnvConfig:
    """How an episode runs. Defaults follow Dr. Kernel's multi-turn setting, except `turn_reward`:
    Dr. Kernel pays every turn its answer's full reward (`absolute`), which pays for resubmitting."""

    max_turns: int = field(default=3, metadata={"help": "answers per episode"})
    stop_on: str = field(default="never", metadata={"help": "end early: never, correct, or speedup (>= target)"})
    target_speedup: float = field(default=1.0, metadata={"help": "speedup that ends the episode with stop_on=speedup"})
    feedback_chars: int = field(default=4000, metadata={"help": "length budget of the rendered feedback"})
    turn_reward: str = field(default="improvement", metadata={
        "help": "improvement: a turn earns what its answer adds over the best earlier turn (an episode returns "
                "its best answer's reward plus every penalty; resubmitting earns nothing); absolute: every turn "
                "earns its answer's full reward (Dr. Kernel's multi-turn reward)"})
    improvement_margin: float = field(default=0.02, metadata={
        "help": "improvement: a gain of at most this over the level already paid (answer-reward units: ~2 % of "
                "speedup under the shaped reward, 0.04x of absolute speedup under drkernel's 0.5 per 1x) is "
                "measurement noise and earns nothing"})

    def __post_init__(self) -> None:
        if self.max_turns < 1:
            raise ValueError("EnvConfig.max_turns must be >= 1")
        if self.stop_on not in STOP_RULES:
            raise ValueError(f"EnvConfig.stop_on must be one of {STOP_RULES}, not {self.stop_on!r}")
        if self.target_speedup <= 0:
            raise ValueError("EnvConfig.target_speedup must be positive")
        if self.improvement_margin < 0:
            raise ValueError("EnvConfig.improvement_margin must be >= 0")
        if self.turn_reward not in TURN_REWARDS:
            raise ValueError(f"EnvConfig.turn_reward must be one of {TURN_REWARDS}, not {self.turn_reward!r}")


class KernelEnv:
    """`reset(task)` → prompt; `step(answer)` → feedback, reward, done.

    `judge_fn` defaults to the in-process judge; the service (issue 4) plugs in here.
    """

    def __init__(self, judge_config: JudgeConfig | None = None, reward_config: RewardConfig | None = None,
                 env_config: EnvConfig | None = None, templates: PromptTemplates | None = None,
                 judge_fn: JudgeFn | None = None) -> None:
        self.judge_config = judge_config or JudgeConfig()
        self.reward_config = reward_config or RewardConfig()
        self.env_config = env_config or EnvConfig()
        self.templates = templates or load_templates()
        self._reward = get_reward(self.reward_config.name)
        if judge_fn is None:
            from kernelgym.judge.judge import judge as judge_fn
        self._judge = judge_fn
        self._task: Task | None = None
        self._state = EpisodeState()

    @property
    def state(self) -> EpisodeState:
        return self._state

    def reset(self, task: Task | str, earlier_rewards: Sequence[float] = ()) -> KernelObservation:
        """Start an episode on `task` (a Task or a task spec naming one task, e.g. a built-in id).

        `earlier_rewards` continues an episode whose first answers were judged before (each answer's own
        reward, in order): the next step is turn len(earlier_rewards) + 1 and earns its reward against
        them. Adapters that hold no server session between turns send them (state.results stays short)."""
        earlier = [float(r) for r in earlier_rewards]
        if len(earlier) >= self.env_config.max_turns:
            raise EnvError(f"an episode of {self.env_config.max_turns} turns cannot continue after {len(earlier)}")
        self._task = _resolve(task)
        state = EpisodeState(task_id=self._task.task_id, done=False, turn=len(earlier))
        for r in earlier:
            state.rewards.append(turn_reward(r, state.answer_rewards, self.env_config.turn_reward,
                                              self.env_config.improvement_margin))
            state.answer_rewards.append(r)
        self._state = state
        return KernelObservation(messages=first_messages(self._task, self.templates),
                                 metadata={"task_id": self._task.task_id, "turn": state.turn})

    def step(self, answer: str) -> KernelObservation:
        """Judge one answer; the observation's messages are the feedback for the next turn."""
        if self._task is None:
            raise EnvError("step() before reset(): start an episode with reset(task)")
        if self._state.done:
            raise EnvError(f"the episode on {self._state.task_id!r} is over ({self._state.turn} turns); call reset()")
        result = self._judge(self._task, answer, self.judge_config)
        state = self._state
        answer_reward = float(self._reward(result, self.reward_config))
        reward = turn_reward(answer_reward, state.answer_rewards, self.env_config.turn_reward,
                             self.env_config.improvement_margin)
        state.turn += 1
        state.answer_rewards.append(answer_reward)
        state.rewards.append(reward)
        state.results.append(result)
        state.done = state.turn >= self.env_config.max_turns or self._success(result)
        feedback = render_feedback(result, self.env_config.feedback_chars)
        return KernelObservation(
            messages=[] if state.done else feedback_messages(feedback, self.templates),
            done=state.done, reward=reward,
            metadata={"result": result.to_dict(), "feedback": feedback, "turn": state.turn,
                      "answer_reward": answer_reward, "returns_to_go": state.returns_to_go() if state.done else None})

    def _success(self, result: EvalResult) -> bool:
        rule = self.env_config.stop_on
        if rule == "never" or not is_pass(result):
            return False
        if rule == "correct":
            return True
        s = speedup(result, self.reward_config)
        return s is not None and s >= self.env_config.target_speedup


def turn_reward(answer_reward: float, earlier: list[float], mode: str, margin: float = 0.0) -> float:
    """A turn's reward from its answer's reward and the earlier answers' rewards.

    improvement: what a positive r_t adds over the level already paid (`paid_level`), clipped at 0,
    so a policy is paid once for its best answer and never for repeating it; a negative r_t (a cheat
    or failure penalty) counts in full every time. Over a positive level, a gain of at most `margin`
    earns nothing and leaves the level where it was: resubmitting the same answer draws a new timing,
    and paying its noise would pay for resubmitting (red team, issue 18); measuring later gains from
    the paid level (not from the best answer) keeps small real gains adding up and gives regressing
    or resubmitting no edge. The episode's return is its paid level (its best answer's reward, within
    `margin`) plus its penalties.
    absolute: r_t (Dr. Kernel), where resubmitting a correct answer pays again."""
    if mode == "absolute" or answer_reward < 0:
        return answer_reward
    level = paid_level(earlier, margin)
    gain = answer_reward - level
    return gain if gain > 0 and (level == 0 or gain > margin) else 0.0


def paid_level(rewards: list[float], margin: float = 0.0) -> float:
    """The answer reward an `improvement` episode has been paid up to after these answers."""
    level = 0.0
    for r in rewards:
        if r > level and (level == 0 or r - level > margin):
            level = r
    return level


def _resolve(task: Task | str) -> Task:
    if isinstance(task, Task):
        return task
    from kernelgym.tasks.loaders import resolve_tasks

    tasks = resolve_tasks(task)
    if len(tasks) != 1:
        raise TaskError(f"task spec {task!r} names {len(tasks)} tasks; an episode needs exactly one")
    return tasks[0]
