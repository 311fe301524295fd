"""Configuration of `train/grpo.py`: our `KernelGymArguments` beside TRL's `GRPOConfig` and
`ModelConfig`, all parsed from one YAML file (`--config`) and the command line by TRL's parser.

A YAML file names only what differs from the defaults; any field of the three dataclasses can be
overridden on the command line (`--max_turns 2 --learning_rate 1e-5`). Our fields carry the
environment, the judge, the turn budget, the advantage estimator and the loss masks; TRL's keep
everything TRL already owns (batch sizes, `num_generations`, `max_completion_length` = the total
token budget of a rollout after its prompt, vLLM, optimiser, logging, checkpointing).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kernelgym.env.environment import STOP_RULES, TURN_REWARDS, EnvConfig
from kernelgym.judge.config import JudgeConfig
from rewards.config import RewardConfig
from rewards.functions import REWARDS
from train.advantages import ADVANTAGE_MODES


@dataclass
class KernelGymArguments:
    """Environment, judge, rollout and loss settings of KernelGym's GRPO/TRLOO trainer.

    Defaults follow Dr. Kernel: 3 turns, the drkernel reward, TRLOO with gamma = 1, PRS on.
    """

    tasks: str = field(default="builtin", metadata={"help": "task spec: a built-in id, comma-separated ids, "
                                                    "builtin, a directory, kernelbench:PATH[:levelN], hf:NAME"})
    task_max_ops: int = field(default=0, metadata={
        "help": "keep only generated tasks whose op chain has at most this many ops (Task.meta num_ops; tasks "
                "without it are kept); 0: all. A curriculum: groups on tasks no rollout solves carry no advantage"})
    task_pass_rates: str | None = field(default=None, metadata={
        "help": "a `kernelgym eval` run (directory or results.jsonl) of the starting policy on the task pool: keep "
                "tasks whose pass rate there is within [task_min_pass, task_max_pass]. A curriculum: groups that all "
                "fail or all pass carry no advantage"})
    task_min_pass: float = field(default=0.0, metadata={"help": "lowest pass rate kept (task_pass_rates)"})
    task_max_pass: float = field(default=1.0, metadata={"help": "highest pass rate kept (task_pass_rates)"})
    task_keep_unmeasured: bool = field(default=False, metadata={
        "help": "task_pass_rates: also keep the pool's tasks the eval did not cover (default: only measured ones)"})
    base_adapter: str | None = field(default=None, metadata={
        "help": "a peft adapter directory (the SFT LoRA) merged into the model before training: RL then trains "
                "its own adapter (use_peft) on base + SFT; parts from `python -m train.adapter_parts split` are "
                "joined first"})
    judge_url: str | None = field(default=None, metadata={"help": "URL of a `kernelgym serve` judging service; "
                                                          "unset: judge in this process"})
    judge_device: str = field(default="auto", metadata={"help": "device the answers run on: cpu, cuda, cuda:N, auto"})
    judge_size: str = field(default="auto", metadata={"help": "task size: full, small or auto (small on cpu)"})
    judge_num_trials: int = field(default=5, metadata={"help": "correctness trials per answer"})
    judge_timeout_s: float = field(default=300.0, metadata={"help": "wall-clock limit of one evaluation"})
    judge_workers: int = field(default=8, metadata={"help": "answers judged at once per process"})
    rollout_waves: int = field(default=1, metadata={"help": "groups of rollouts that take turns on the generator: "
                                                    "while one wave is judged the next generates (1: all at once)"})
    reward: str = field(default="drkernel", metadata={"help": "reward function, a key of rewards.REWARDS"})
    max_turns: int = field(default=3, metadata={"help": "answers per episode"})
    max_seconds: float = field(default=0.0, metadata={"help": "stop within this many seconds of training with a "
                                                       "checkpoint, exit code 3; run again with "
                                                       "`--resume_from_checkpoint auto` to go on (0: no limit)"})
    stop_on: str = field(default="never", metadata={"help": "end an episode early: never, correct or speedup"})
    feedback_chars: int = field(default=4000, metadata={"help": "length budget of one feedback turn's text"})
    turn_reward: str = field(default="improvement", metadata={
        "help": "improvement (a turn earns what it adds over the best earlier turn; resubmitting earns nothing) "
                "or absolute (every turn earns its answer's full reward, Dr. Kernel)"})
    improvement_margin: float = field(default=0.02, metadata={
        "help": "improvement: a gain of at most this over the level already paid is timing noise and earns nothing"})
    max_turn_tokens: int = field(default=1024, metadata={"help": "tokens one answer may take; the total after "
                                                         "the prompt is GRPOConfig.max_completion_length"})
    end_of_turn_token: str | None = field(default=None, metadata={"help": "token that ends an assistant turn in "
                                                                  "the chat template; unset: the eos token"})
    advantage: str = field(default="trloo", metadata={"help": "trloo (turn-level leave-one-out), grpo (plain "
                                                      "multi-turn GRPO) or last_turn (last answer's reward, LOO)"})
    gamma: float = field(default=1.0, metadata={"help": "discount of the return-to-go over turns"})
    prs: bool = field(default=True, metadata={"help": "profiling-based rejection sampling: drop correct turns "
                                              "with a low Triton share (needs GPU profiles; off on cpu)"})
    mask_after_positive: bool = field(default=True, metadata={"help": "mask turns with reward <= 0 that follow "
                                                              "a turn with reward > 0"})
    mismatch_rejection: bool = field(default=True, metadata={"help": "reject trajectories whose sampler and "
                                                             "trainer log-probs disagree"})
    mismatch_geo_low: float = field(default=0.99, metadata={"help": "lowest geometric-mean ratio "
                                                            "pi_train/pi_sampler a kept trajectory may have"})
    mismatch_geo_high: float = field(default=1.01, metadata={"help": "highest geometric-mean ratio kept"})
    mismatch_veto: float = field(default=1e-4, metadata={"help": "a token ratio pi_train/pi_sampler below this "
                                                         "rejects its trajectory (0: no veto)"})

    def __post_init__(self) -> None:
        if self.max_seconds < 0:
            raise ValueError(f"max_seconds must be >= 0, not {self.max_seconds}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(sorted(REWARDS))}, not {self.reward!r}")
        if self.advantage not in ADVANTAGE_MODES:
            raise ValueError(f"advantage must be one of {ADVANTAGE_MODES}, not {self.advantage!r}")
        if self.turn_reward not in TURN_REWARDS:
            raise ValueError(f"turn_reward must be one of {TURN_REWARDS}, not {self.turn_reward!r}")
        if self.stop_on not in STOP_RULES:
            raise ValueError(f"stop_on must be one of {STOP_RULES}, not {self.stop_on!r}")
        if not 0.0 <= self.task_min_pass <= self.task_max_pass <= 1.0:
            raise ValueError("task_min_pass and task_max_pass must satisfy 0 <= min <= max <= 1, not "
                             f"{self.task_min_pass} and {self.task_max_pass}")
        if self.task_max_ops < 0:
            raise ValueError(f"task_max_ops must be >= 0 (0: every task), not {self.task_max_ops}")
        if self.max_turns < 1 or self.max_turn_tokens < 1 or self.judge_workers < 1 or self.rollout_waves < 1:
            raise ValueError("max_turns, max_turn_tokens, judge_workers and rollout_waves must be >= 1")
        if not 0.0 < self.gamma <= 1.0:
            raise ValueError(f"gamma must be in (0, 1], not {self.gamma!r}")
        if not 0.0 < self.mismatch_geo_low <= 1.0 <= self.mismatch_geo_high:
            raise ValueError("mismatch bounds must satisfy 0 < mismatch_geo_low <= 1 <= mismatch_geo_high, got "
                             f"{self.mismatch_geo_low} and {self.mismatch_geo_high}")
        if not 0.0 <= self.mismatch_veto < 1.0:
            raise ValueError(f"mismatch_veto must be in [0, 1), not {self.mismatch_veto!r}")

    def judge_config(self, local_rank: int | None = None) -> JudgeConfig:
        """The judge's configuration; with several processes on one node, `cuda` (or `auto` on a GPU
        machine) becomes each process's own GPU, `cuda:<local_rank>`."""
        device = self.judge_device
        if local_rank is not None and device in ("auto", "cuda"):
            import torch

            if torch.cuda.is_available():
                device = f"cuda:{local_rank}"
        return JudgeConfig(device=device, size=self.judge_size, num_trials=self.judge_num_trials,
                           timeout_s=self.judge_timeout_s)

    def reward_config(self) -> RewardConfig:
        return RewardConfig(name=self.reward)

    def env_config(self) -> EnvConfig:
        return EnvConfig(max_turns=self.max_turns, stop_on=self.stop_on, feedback_chars=self.feedback_chars,
                         turn_reward=self.turn_reward, improvement_margin=self.improvement_margin)


def parse_args(argv: Sequence[str] | None = None):
    """(KernelGymArguments, GRPOConfig, ModelConfig) from `--config FILE.yaml` and command-line overrides."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    parser = TrlParser((KernelGymArguments, GRPOConfig, ModelConfig))
    kg, args, model_args = parser.parse_args_and_config(args=list(argv) if argv is not None else None)
    if args.max_completion_length is None or args.max_completion_length < kg.max_turn_tokens:
        raise ValueError(f"max_completion_length ({args.max_completion_length}) is the token budget of a whole "
                         f"rollout after its prompt: it must be at least max_turn_tokens ({kg.max_turn_tokens})")
    return kg, args, model_args
