"""TRL: `GRPOTrainer(environment_factory=kernelgym_environment_factory(...))` (TRL 1.16).

What TRL asks of an environment_factory (trl/trainer/grpo_trainer.py, 1.16): a zero-argument
callable returning an object with `reset(**row)`, called with the dataset row before each rollout
and whose returned string is appended to the row's last user message; every other public method
becomes a tool the model may call (typed arguments, Google-style docstring); an optional
`get_reward()` makes the environment a reward source scored once per finished rollout. TRL pools
the instances and resets them between rollouts, so one instance is one server session for the
whole run. No TRL import is needed here: the contract is duck-typed.

For plain single-turn GRPO, `KernelGymReward` is a `reward_funcs` entry instead: TRL calls it with
`prompts`, `completions` and every other dataset column as keyword lists (`task` among them), plus
`trainer_state`, `log_extra` and `log_metric`, and takes one float per completion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from kernelgym.env.adapters.backend import (
    EPISODE_OVER,
    REWARD_MODES,
    EpisodeBackend,
    episode_reward,
    first_user_text,
    judge_turn,
    last_assistant_text,
    make_backend,
    task_prompt,
)
from kernelgym.env.prompts import PromptTemplates, load_templates

TASK_COLUMN = "task"
SUBMIT_NOTE = ("\n\nSubmit each attempt by calling the `submit` tool with your complete code; "
               "the judge's feedback comes back as the tool's result, and you may then submit an improved version.")


class KernelGymToolEnv:
    """One rollout's KernelGym episode as a TRL tool environment: the model answers by calling
    `submit`, each call is one judged turn, and `get_reward` scores the episode."""

    def __init__(self, backend: EpisodeBackend, reward: str = "sum") -> None:
        if reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, not {reward!r}")
        self._backend = backend
        self._reward_mode = reward
        self._rewards: list[float | None] = []

    def reset(self, **row: Any) -> str:
        """Start the episode on the row's `task` column; the task prompt to append to the user turn."""
        task = row.get(TASK_COLUMN)
        if not task:
            raise ValueError(f"the dataset row has no {TASK_COLUMN!r} column naming a task "
                             f"(columns: {', '.join(sorted(row))}); build rows with kernelgym's trl.dataset_rows")
        self._rewards = []
        return first_user_text(self._backend.reset(str(task))) + SUBMIT_NOTE

    def submit(self, code: str) -> str:
        """Submit a complete solution to the judge: Python source defining class ModelNew with @triton.jit kernels.

        Args:
            code: The full Python source of the solution.

        Returns:
            The judge's feedback: correctness, errors, speedup and what to improve.
        """
        obs = self._backend.step(code)
        self._rewards.append(obs.reward)
        # The bare feedback: the templates' feedback turn asks for a code block, but here answers are tool calls.
        return obs.metadata.get("feedback", "") + (EPISODE_OVER if obs.done else "")

    def get_reward(self) -> float:
        """The episode's reward: the sum, last or best of its turn rewards (0.0 if nothing was submitted)."""
        return episode_reward(self._rewards, self._reward_mode)


@dataclass(frozen=True)
class KernelGymEnvironmentFactory:
    """The `environment_factory` for GRPOTrainer: each call opens one session on the server at
    `base_url` (or builds an in-process `KernelEnv(**kernel_env_kwargs)` when no URL is given).

    A class, not a closure, so that it pickles: TRL's `AsyncGRPOTrainer` sends the factory to a
    spawned child process (where CUDA is hidden: give it a `base_url`)."""

    base_url: str | None = None
    reward: str = "sum"
    kernel_env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.reward not in REWARD_MODES:
            raise ValueError(f"reward must be one of {REWARD_MODES}, not {self.reward!r}")
        if self.base_url and self.kernel_env_kwargs:
            raise ValueError(f"{sorted(self.kernel_env_kwargs)} configure an in-process KernelEnv; "
                             "a server is configured where it is started (kernelgym env serve)")

    def __call__(self) -> KernelGymToolEnv:
        return KernelGymToolEnv(make_backend(self.base_url, **self.kernel_env_kwargs), reward=self.reward)


def kernelgym_environment_factory(base_url: str | None = None, reward: str = "sum",
                                  **kernel_env_kwargs: Any) -> KernelGymEnvironmentFactory:
    """`KernelGymEnvironmentFactory(base_url, reward, kernel_env_kwargs)`, with the KernelEnv
    arguments as keywords."""
    return KernelGymEnvironmentFactory(base_url, reward, dict(kernel_env_kwargs))


def dataset_rows(task_ids: Sequence[str], templates: PromptTemplates | None = None) -> list[dict[str, Any]]:
    """Rows for `datasets.Dataset.from_list`: our system prompt and an empty user turn that `reset`
    fills with the task, plus the `task` column `reset` reads."""
    system = (templates or load_templates()).system.substitute().strip()
    return [{"prompt": [{"role": "system", "content": system}, {"role": "user", "content": ""}], TASK_COLUMN: t}
            for t in task_ids]


@dataclass(frozen=True)
class KernelGymReward:
    """A `reward_funcs` entry for plain, single-turn GRPO (`GRPOTrainer(reward_funcs=KernelGymReward(...))`):
    each completion is judged as the one answer of an episode on its row's `task` column, and scores
    that answer's reward. `jobs` completions are judged at once, each in its own server session
    (`base_url`), or in process (`KernelEnv(**kernel_env_kwargs)`). Picklable, as AsyncGRPOTrainer needs.

    Rows: `single_turn_rows` (the task's own prompt, no tool)."""

    base_url: str | None = None
    jobs: int = 8
    kernel_env_kwargs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.jobs < 1:
            raise ValueError(f"jobs must be >= 1, not {self.jobs}")
        if self.base_url and self.kernel_env_kwargs:
            raise ValueError(f"{sorted(self.kernel_env_kwargs)} configure an in-process KernelEnv; "
                             "a server is configured where it is started (kernelgym env serve)")

    def __call__(self, prompts: list[Any], completions: list[Any], task: list[str] | None = None,
                 log_metric: Callable[[str, float], None] | None = None, **kwargs: Any) -> list[float]:
        """TRL's reward-function call: one reward per completion (`task` is the dataset column)."""
        if task is None:
            raise ValueError(f"the dataset has no {TASK_COLUMN!r} column naming each row's task "
                             f"(columns: {', '.join(sorted(kwargs))}); build rows with kernelgym's trl.single_turn_rows")
        answers = [c if isinstance(c, str) else last_assistant_text(c) for c in completions]

        def judge(pair: tuple[str, str]) -> Any:
            return judge_turn(self._backend, pair[0], pair[1], ())

        with ThreadPoolExecutor(max_workers=min(self.jobs, len(answers) or 1)) as pool:
            observations = list(pool.map(judge, zip(task, answers, strict=True)))
        if log_metric is not None and observations:
            passed = [(o.metadata.get("result") or {}).get("status") == "ok" for o in observations]
            log_metric("kernelgym/correct", sum(passed) / len(passed))
        return [float(o.metadata.get("answer_reward", o.reward or 0.0)) for o in observations]

    def _backend(self) -> EpisodeBackend:
        return make_backend(self.base_url, **self.kernel_env_kwargs)


def single_turn_rows(task_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Rows for single-turn GRPO with `KernelGymReward`: the task's own prompt (system and user turn)
    and the `task` column the reward reads."""
    return [{"prompt": task_prompt(t), TASK_COLUMN: t} for t in task_ids]
