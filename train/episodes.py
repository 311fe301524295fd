"""Where the trainer's episodes run: an in-process `KernelEnv` per rollout, judging either in this
process (`kernelgym.judge`, one sandboxed child per answer) or on the judging service over HTTP
(`kernelgym serve`). Each rollout owns its own environment, so the judging of all rollouts of a
step can run concurrently from threads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from kernelgym.env.adapters.backend import EpisodeBackend
from kernelgym.env.environment import EnvConfig, JudgeFn, KernelEnv
from kernelgym.env.prompts import load_templates
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult, Status
from kernelgym.tasks.task import Task
from rewards.config import RewardConfig

log = logging.getLogger(__name__)


def local_judge_fn() -> JudgeFn:
    """The in-process judge, through the batch runner's per-evaluation step (an `oom` is judged again
    with the device to itself, a broken task is a verdict, not an exception)."""
    from kernelgym.judge.batch import SharedGate, judge_one

    gate = SharedGate()  # one gate for every rollout: concurrent evaluations share the device

    def judge_fn(task: Task, answer: str, config: JudgeConfig) -> EvalResult:
        return judge_one(task, answer, config, gate)

    return judge_fn


def service_judge_fn(base_url: str, overrides: dict[str, object], timeout_s: float) -> JudgeFn:
    """Judge on the KernelGym service at `base_url` (stateless `/v1/evaluate`). The task's source is
    sent along, so the service needs no copy of our task set. A failed call becomes a
    `system_error` result (reward 0 under every reward), not a crashed training step."""
    import httpx

    from kernelgym.service.client import KernelGymClient, KernelGymError

    client = KernelGymClient(base_url)  # httpx.Client is safe to share between the judging threads

    def judge_fn(task: Task, answer: str, config: JudgeConfig) -> EvalResult:
        try:
            return client.evaluate(task.task_id, answer, config=dict(overrides), task_source=task.source,
                                   timeout=timeout_s)
        except (KernelGymError, httpx.HTTPError) as e:
            log.warning("judging service call for %s failed: %s", task.task_id, e)
            return EvalResult(status=Status.SYSTEM_ERROR, task_id=task.task_id, message=f"service call failed: {e}")

    return judge_fn


def episode_factory(judge_config: JudgeConfig, reward_config: RewardConfig, env_config: EnvConfig,
                    judge_url: str | None = None) -> Callable[[], EpisodeBackend]:
    """A zero-argument factory of fresh episodes (one per rollout), all sharing one judge function."""
    if judge_url:
        overrides = {"size": judge_config.size,  # the service's workers choose the device
                     "num_trials": judge_config.num_trials, "timeout_s": judge_config.timeout_s}
        judge_fn = service_judge_fn(judge_url, overrides, timeout_s=judge_config.timeout_s)
    else:
        judge_fn = local_judge_fn()
    templates = load_templates()

    def make() -> EpisodeBackend:
        return KernelEnv(judge_config=judge_config, reward_config=reward_config, env_config=env_config,
                         templates=templates, judge_fn=judge_fn)

    return make
