"""Multi-turn GRPO/TRLOO training of a Triton-kernel writer on KernelGym, on TRL's GRPOTrainer.

    accelerate launch train/grpo.py --config configs/tiny_cpu.yaml [--field value ...]
    accelerate launch --config_file configs/accelerate/fsdp.yaml train/grpo.py --config configs/qwen7b_8gpu.yaml

Every field of `KernelGymArguments` (train/config.py), TRL's `GRPOConfig` and `ModelConfig` can be
set in the YAML file or overridden on the command line. Checkpoints go to `output_dir`; resume
with `--resume_from_checkpoint last` (the newest checkpoint there) or a checkpoint's path.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if __package__ in (None, ""):  # `accelerate launch train/grpo.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is experimental in TRL 1.16: we know

from kernelgym.env.adapters.backend import EpisodeBackend
from kernelgym.env.prompts import first_messages, load_templates
from kernelgym.tasks.loaders import resolve_tasks
from kernelgym.tasks.task import Task
from train.callbacks import NonFiniteGuard, TimeBudget, TrainingDiverged, resolve_resume
from train.config import KernelGymArguments, parse_args
from train.curriculum import pass_rates, within_max_ops, within_pass_range
from train.generation import Generator

if TYPE_CHECKING:
    from trl import GRPOConfig, ModelConfig

    from train.trainer import KernelGymGRPOTrainer

log = logging.getLogger("train.grpo")


def task_rows(tasks: Sequence[Task]) -> list[dict[str, object]]:
    """Dataset rows: the `task` id the rollout runs, and the first messages (for TRL's logs only; the
    rollout renders the environment's own reset observation)."""
    templates = load_templates()
    return [{"prompt": first_messages(t, templates), "task": t.task_id} for t in tasks]


def build_trainer(kg: KernelGymArguments, args: GRPOConfig, model_args: ModelConfig,
                  make_backend: Callable[[], EpisodeBackend] | None = None,
                  generator: Generator | None = None) -> KernelGymGRPOTrainer:
    """The `KernelGymGRPOTrainer` a config describes (model, dataset, episodes, rollout, peft).
    `make_backend` (episodes) and `generator` (sampling) replace the configured ones: checks and tests."""
    from datasets import Dataset
    from trl import get_peft_config

    from train.episodes import episode_factory
    from train.models import load_policy
    from train.rollout import MultiTurnRollout, RolloutLimits
    from train.trainer import KernelGymGRPOTrainer

    tasks = within_max_ops(resolve_tasks(kg.tasks), kg.task_max_ops)
    if kg.task_pass_rates:
        tasks = within_pass_range(tasks, pass_rates(kg.task_pass_rates), kg.task_min_pass, kg.task_max_pass,
                                  kg.task_keep_unmeasured)
    if not tasks:
        raise ValueError(f"task spec {kg.tasks!r} names no task"
                         + (f" of at most {kg.task_max_ops} ops (task_max_ops)" if kg.task_max_ops else "")
                         + (f" with a pass rate in [{kg.task_min_pass:g}, {kg.task_max_pass:g}] (task_pass_rates)"
                            if kg.task_pass_rates else ""))
    model, tokenizer = load_policy(model_args, args, kg.base_adapter)
    if make_backend is None:
        local_rank = int(os.environ["LOCAL_RANK"]) if "LOCAL_RANK" in os.environ else None
        make_backend = episode_factory(kg.judge_config(local_rank), kg.reward_config(), kg.env_config(), kg.judge_url)
    limits = RolloutLimits(max_turns=kg.max_turns, max_turn_tokens=kg.max_turn_tokens,
                           max_completion_tokens=args.max_completion_length, judge_workers=kg.judge_workers,
                           waves=kg.rollout_waves)
    rollout = MultiTurnRollout(make_backend, limits, kg.reward_config(), tasks=tasks,
                               end_of_turn_token=kg.end_of_turn_token, generator=generator)
    return KernelGymGRPOTrainer(model=model, args=args, train_dataset=Dataset.from_list(task_rows(tasks)),
                                processing_class=tokenizer, peft_config=get_peft_config(model_args),
                                kg=kg, rollout=rollout)


def resume_target(value: str | None, output_dir: str | Path = ".") -> str | None:
    """`auto`, `last` or `true`: the newest checkpoint in output_dir (None on a first run, so the same
    command starts and resumes); a path resumes from it."""
    if isinstance(value, str) and value.lower() in ("none", "false"):
        return None
    return resolve_resume(value, output_dir)


def describe_resume(checkpoint: str | Path) -> str:
    """Log (and return) what a resume from `checkpoint` continues: the step, and whether the optimizer's
    state came along (a checkpoint carried without it, `adapter_parts split --no-optimizer`, restarts
    the optimizer and its scheduler; the step count and the adapter continue)."""
    import json

    path = Path(checkpoint)
    state = path / "trainer_state.json"
    step = json.loads(state.read_text()).get("global_step") if state.is_file() else None
    if (path / "optimizer.pt").is_file():
        text = f"resuming from {path} at step {step} with its optimizer state"
        log.info(text)
    else:
        text = (f"resuming from {path} at step {step} without optimizer state: the optimizer and the "
                "learning-rate schedule restart; the adapter and the step count continue")
        log.warning(text)
    return text


def main(argv: Sequence[str] | None = None) -> int:
    """Train and save; 3 when `max_seconds` stopped it with a checkpoint to resume from."""
    kg, args, model_args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    trainer = build_trainer(kg, args, model_args)
    guard = NonFiniteGuard()
    trainer.add_callback(guard)
    budget = TimeBudget(kg.max_seconds) if kg.max_seconds else None
    if budget is not None:
        trainer.add_callback(budget)
    resume = resume_target(args.resume_from_checkpoint, args.output_dir)
    if resume:
        describe_resume(resume)
    trainer.train(resume_from_checkpoint=resume)
    trainer.save_state()  # trainer_state.json: every logged step (rewards, masks, mismatch, time split)
    if guard.diverged:
        raise TrainingDiverged(f"training diverged at {guard.diverged}; model not saved")
    if budget is not None and budget.state.stopped_early:
        log.info("time budget of %.0f s reached at step %d of %d: checkpoint in %s; run again with "
                 "--resume_from_checkpoint auto", kg.max_seconds, budget.state.step, budget.state.max_steps,
                 args.output_dir)
        return 3
    trainer.save_model(args.output_dir)
    log.info("model saved to %s", args.output_dir)
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except (TrainingDiverged, ValueError) as e:  # a diverged run or a bad argument: one line, no traceback
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    raise SystemExit(code)
