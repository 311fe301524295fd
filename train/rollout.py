"""Multi-turn rollouts for TRL's `rollout_func`: generate, judge, append the feedback, repeat.

One rollout is one episode of a `KernelEnv` (or any `EpisodeBackend`). Its ids are the prompt, then
answer, feedback, answer, ... concatenated as token ids (`train.chat_ids`): the answers are the ids
the policy sampled, the feedback turns are environment tokens, masked out of the loss (`env_mask`
0). Each turn generates at most `max_turn_tokens`; a next turn is started only if its feedback and a
full `max_turn_tokens` still fit in `max_completion_tokens` (TRL's `max_completion_length`), so the
completion never exceeds the budget. An answer cut by the per-turn limit is judged like any other
and closed with the end-of-turn token. All answers of a turn, across rollouts, are judged concurrently.

With `waves` > 1 the rollouts are split into that many groups that take turns on the generator: while
one wave's answers are judged, the next wave generates, so the GPU's generation and the judge overlap
(the judge-beside-the-trainer schedule of issue 17). Each wave still sees its own feedback before its
next turn; only the order of generator calls changes, and every process makes the same calls.

Per rollout the output carries `turns`: one record per answer with its token span [start, end) in
the completion, its reward and the judge's verdict, which the trainer turns into per-token
advantages and masks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from kernelgym.env.adapters.backend import EpisodeBackend
from kernelgym.env.environment import KernelObservation
from kernelgym.judge.result import EvalResult
from kernelgym.tasks.task import Task
from rewards.config import RewardConfig
from rewards.functions import is_pass, speedup, triton_share
from rewards.prs import prs_keep_probability
from train.chat_ids import ChatContinuation, prompt_ids
from train.generation import Generator, make_generator

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase
    from trl import GRPOTrainer

TASK_COLUMN = "task"


@dataclass
class RolloutLimits:
    """Turn and token limits of one rollout."""

    max_turns: int
    max_turn_tokens: int
    max_completion_tokens: int
    judge_workers: int = 8
    waves: int = 1  # groups of rollouts that alternate on the generator while others are judged

    def __post_init__(self) -> None:
        if self.max_turns < 1 or self.max_turn_tokens < 1 or self.judge_workers < 1 or self.waves < 1:
            raise ValueError("RolloutLimits needs max_turns, max_turn_tokens, judge_workers and waves >= 1")
        if self.max_completion_tokens < self.max_turn_tokens:
            raise ValueError(f"max_completion_length ({self.max_completion_tokens}) must be at least "
                             f"max_turn_tokens ({self.max_turn_tokens}): one answer must fit")


@dataclass
class Trajectory:
    """One rollout being built: ids after the prompt, loss mask, sampler log-probs, turn records."""

    backend: EpisodeBackend
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    turns: list[dict[str, Any]] = field(default_factory=list)
    active: bool = True

    def append(self, ids: Sequence[int], model: bool, logprobs: Sequence[float] | None = None) -> tuple[int, int]:
        start = len(self.completion_ids)
        self.completion_ids.extend(ids)
        self.env_mask.extend([1 if model else 0] * len(ids))
        self.logprobs.extend(logprobs if logprobs is not None else [0.0] * len(ids))
        return start, len(self.completion_ids)


def turn_record(obs: KernelObservation, span: tuple[int, int], reward_config: RewardConfig,
                stop: str = "", truncated: bool = False) -> dict[str, Any]:
    """What the trainer needs of one judged answer: span, reward, verdict, speedup, share, PRS keep-prob.
    `stop` says why the episode ended after this turn ('' when it goes on): done, max_turns, budget;
    `truncated` that the answer hit the per-turn token limit."""
    d = obs.metadata.get("result")
    result = EvalResult.from_dict(d) if d is not None else None
    s = speedup(result, reward_config) if result is not None else None
    return {
        "start": span[0], "end": span[1], "reward": float(obs.reward or 0.0),
        "status": result.status.value if result is not None else "unknown",
        "compiled": bool(result is not None and result.compiled),
        "passed": bool(result is not None and is_pass(result)),
        "speedup": float(s) if s is not None else None,
        "triton_share": triton_share(result) if result is not None and result.profile is not None else None,
        "prs_keep_prob": prs_keep_probability(result, reward_config) if result is not None else 0.0,
        "stop": stop,
        "truncated": truncated,
    }


class MultiTurnRollout:
    """TRL's `rollout_func`: `rollout(prompts, trainer)` runs one episode per prompt.

    The task of each prompt comes from the `task` column of the trainer's current rows
    (`KernelGymGRPOTrainer.rollout_rows`); the prompt itself is the environment's first observation,
    rendered by the chat template. `last_timing` holds the last call's generation and judging seconds.
    `generator` replaces the trainer's generation backend (tests and scripted checks).
    """

    def __init__(self, make_backend: Callable[[], EpisodeBackend], limits: RolloutLimits,
                 reward_config: RewardConfig, tasks: Sequence[Task] = (), end_of_turn_token: str | None = None,
                 generator: Generator | None = None) -> None:
        self.make_backend = make_backend
        self.limits = limits
        self.reward_config = reward_config
        self.tasks = {t.task_id: t for t in tasks}
        self.end_of_turn_token = end_of_turn_token
        self.last_timing: dict[str, float] = {}
        self.generator = generator  # None: the trainer's own backend (vLLM or transformers), made on first use
        self._continuation: ChatContinuation | None = None

    def __call__(self, prompts: list[Any], trainer: GRPOTrainer) -> dict[str, list[Any]]:
        rows = getattr(trainer, "rollout_rows", None)
        if not rows or len(rows) != len(prompts):
            raise RuntimeError("MultiTurnRollout needs the batch rows on the trainer (KernelGymGRPOTrainer.rollout_rows)")
        if self.generator is None:
            self.generator = make_generator(trainer)
        if self._continuation is None:
            self._continuation = ChatContinuation(trainer.processing_class, self.end_of_turn_token)

        def global_active(n: int) -> int:
            return int(trainer.accelerator.gather(torch.tensor([n], device=trainer.accelerator.device)).sum())

        return self.run([str(r[TASK_COLUMN]) for r in rows], self.generator, self._continuation,
                        trainer.processing_class, global_active)

    def run(self, task_ids: Sequence[str], generator: Generator, continuation: ChatContinuation,
            tokenizer: PreTrainedTokenizerBase, global_active: Callable[[int], int] = lambda n: n
            ) -> dict[str, list[Any]]:
        """Run one episode per task id; `global_active` sums the number of running episodes over all
        processes, so that every process calls the generator the same number of times."""
        lim = self.limits
        trajs = []
        for task_id in task_ids:
            backend = self.make_backend()
            obs = backend.reset(self.tasks.get(task_id, task_id))
            trajs.append(Trajectory(backend=backend, prompt_ids=prompt_ids(tokenizer, obs.messages,
                                                                           continuation.chat_template)))
        gen_s = judge_s = 0.0
        waves = _split(trajs, lim.waves)
        pending: list[_Judging | None] = [None] * len(waves)
        with ThreadPoolExecutor(lim.judge_workers) as pool:
            for _ in range(lim.max_turns):
                for w, wave in enumerate(waves):
                    if pending[w] is not None:  # this wave's last answers: wait for their verdicts
                        judge_s += pending[w].finish(self, continuation)
                        pending[w] = None
                    active = [t for t in wave if t.active]
                    if global_active(len(active)) == 0:
                        continue
                    start = time.perf_counter()
                    gens = generator.generate([t.prompt_ids + t.completion_ids for t in active], lim.max_turn_tokens)
                    gen_s += time.perf_counter() - start
                    spans = [t.append(g.ids, model=True, logprobs=g.logprobs) for t, g in zip(active, gens)]
                    answers = [tokenizer.decode(g.ids, skip_special_tokens=True) for g in gens]
                    pending[w] = _Judging(active, gens, spans,
                                          [pool.submit(t.backend.step, a) for t, a in zip(active, answers)])
            for judging in pending:
                if judging is not None:
                    judge_s += judging.finish(self, continuation)
        self.last_timing = {"generate_s": gen_s, "judge_s": judge_s}
        return {
            "prompt_ids": [t.prompt_ids for t in trajs],
            "completion_ids": [t.completion_ids for t in trajs],
            "logprobs": [t.logprobs for t in trajs],
            "env_mask": [t.env_mask for t in trajs],
            "turns": [t.turns for t in trajs],
        }

    def _advance(self, traj: Trajectory, answer_ids: list[int], obs: KernelObservation, span: tuple[int, int],
                 continuation: ChatContinuation) -> None:
        """Record the judged turn and either append the feedback turn or end the episode."""
        ended = continuation.ends_turn(answer_ids)
        suffix: list[int] = []
        if obs.done:
            stop = "done"
        elif len(traj.turns) + 1 >= self.limits.max_turns:  # a backend with more turns than we take
            stop = "max_turns"
        else:
            # An answer cut by the per-turn limit is closed with the end-of-turn token (an environment
            # token, not trained), so the ids stay what the chat template would render.
            suffix = ([] if ended else [continuation.end_of_turn_id]) + continuation.suffix_ids(obs.messages)
            room = self.limits.max_completion_tokens - len(traj.completion_ids) - len(suffix)
            stop = "" if room >= self.limits.max_turn_tokens else "budget"
        traj.turns.append(turn_record(obs, span, self.reward_config, stop, truncated=not ended))
        if stop:
            traj.active = False
        else:
            traj.append(suffix, model=False)


@dataclass
class _Judging:
    """One wave's answers of one turn, submitted to the judging pool."""

    trajs: list[Trajectory]
    gens: list[Any]
    spans: list[tuple[int, int]]
    futures: list[Future]

    def finish(self, rollout: MultiTurnRollout, continuation: ChatContinuation) -> float:
        """Wait for the verdicts, record them in the trajectories; the seconds spent waiting."""
        start = time.perf_counter()
        observations = [f.result() for f in self.futures]
        waited = time.perf_counter() - start
        for traj, gen, obs, span in zip(self.trajs, self.gens, observations, self.spans):
            rollout._advance(traj, gen.ids, obs, span, continuation)
        return waited


def _split(items: list[Trajectory], n: int) -> list[list[Trajectory]]:
    """Exactly `n` contiguous groups, as even as can be (a prompt's rollouts, adjacent in TRL's batch,
    stay together where the sizes allow). Always `n`, empty ones too: every process must make the
    same sequence of generator calls."""
    size, extra = divmod(len(items), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def episode_return(completions: list[Any], turns: list[list[dict[str, Any]]], **kwargs: Any) -> list[float]:
    """TRL reward function: the episode's return with gamma = 1 (sum of its turn rewards). TRL logs
    it as `rewards/episode_return`; the trainer replaces TRL's advantages with turn-level ones."""
    return [sum(t["reward"] for t in ts) for ts in turns]
