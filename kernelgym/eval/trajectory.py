"""One (task, sample) episode of an eval: KernelEnv fed with answers the service already judged.

The environment owns the episode's rules (turn limit, stop rule, reward, feedback text and the
prompt templates); this module only keeps the turns and decides which of them the next prompt
shows. For test-time scaling past the turns a model was trained on, `context_turns` keeps a
window: the latest turn (its feedback is what the model must answer) plus the best of the
earlier ones, in their original order.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernelgym.env.environment import EnvConfig, KernelEnv
from kernelgym.env.prompts import PromptTemplates
from kernelgym.eval.metrics import rank_key
from kernelgym.generation.base import Conversation, Message
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult
from kernelgym.tasks.task import Task


@dataclass
class Turn:
    """One answered turn: the answer, its verdict, and the feedback messages that followed it
    (empty after the last turn)."""

    answer: str
    result: EvalResult
    feedback: list[Message]
    reward: float  # the answer's own reward (KernelEnv's `answer_reward`), not the turn's gain over earlier turns


class Trajectory:
    """A KernelEnv episode whose judge is the verdict handed to `record`."""

    def __init__(self, task: Task, sample: int, env_config: EnvConfig, templates: PromptTemplates) -> None:
        self.task = task
        self.sample = sample
        self._verdict: EvalResult | None = None
        self._env = KernelEnv(env_config=env_config, templates=templates, judge_fn=self._judged)
        self.first: list[Message] = self._env.reset(task).messages
        self.turns: list[Turn] = []
        self.done = False

    def _judged(self, task: Task, answer: str, config: JudgeConfig) -> EvalResult:
        assert self._verdict is not None, "record() hands the verdict in before stepping the env"
        return self._verdict

    def record(self, answer: str, result: EvalResult) -> None:
        """Step the environment with an answer and its verdict; the episode may end here."""
        self._verdict = result
        try:
            obs = self._env.step(answer)
        finally:
            self._verdict = None
        self.turns.append(Turn(answer, result, obs.messages, float(obs.metadata["answer_reward"])))
        self.done = obs.done

    def conversation(self, context_turns: int | None = None) -> Conversation:
        """The prompt for the next turn: the task, then each kept turn's answer and feedback."""
        messages = [dict(m) for m in self.first]
        for i in kept_turns([t.result for t in self.turns], context_turns):
            turn = self.turns[i]
            messages.append({"role": "assistant", "content": turn.answer})
            messages.extend(dict(m) for m in turn.feedback)
        return messages


def kept_turns(results: list[EvalResult], window: int | None) -> list[int]:
    """Indices of the turns a prompt shows: all of them, or with a `window` of W turns the latest
    plus the W-1 best earlier ones (`rank_key`; the later of equals), in turn order."""
    if window is None or len(results) <= window:
        return list(range(len(results)))
    if window < 1:
        raise ValueError("context_turns must be >= 1")
    last = len(results) - 1
    earlier = sorted(range(last), key=lambda i: (rank_key(results[i]), i), reverse=True)[:window - 1]
    return sorted(earlier) + [last]
