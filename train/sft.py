"""Cold-start SFT of a Triton-kernel writer on TRL's SFTTrainer, on the verified corpus of
`kernelgym data coldstart` or on data exported by `kernelgym data export`.

    python train/sft.py --config configs/sft_coldstart_cpu.yaml --data runs/coldstart [--field value ...]
    accelerate launch train/sft.py --config configs/sft_smollm2_h100.yaml --data runs/coldstart

The same configuration system as `train/grpo.py`: one YAML file and command-line overrides parsed
by TRL's parser into our `SFTDataArguments`, TRL's `SFTConfig` and `ModelConfig`; the policy comes
from `train.models.load_policy` (a hub id, a directory, or `kernelgym:tiny` for CPU runs). The
data are prompt-completion chats (the exporter's `sft` or `best_of_n` file), so the loss falls on
the chosen answer only and the earlier turns of a multi-turn episode are context.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # `python train/sft.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernelgym.export.tables import read_table  # noqa: E402

log = logging.getLogger("train.sft")
CHAT_COLUMNS = ("prompt", "completion")


@dataclass
class SFTDataArguments:
    """Where the SFT examples come from."""

    data: str = field(default="", metadata={"help": "rows of `kernelgym data export`: an sft/best_of_n .parquet "
                                            "or .jsonl file, or the export directory (its sft file)"})
    max_examples: int = field(default=0, metadata={"help": "train on the first N examples only (0: all)"})
    split: str = field(default="train", metadata={"help": "rows with a `split` column: keep this split only (held-out "
                                                  "tasks never reach SFT); empty keeps every row"})
    max_nonfinite_skips: int = field(default=3, metadata={"help": "skip an optimizer step whose gradients are NaN "
                                                          "or infinite (zeroed); more than this many in a row "
                                                          "ends the run as diverged"})
    max_seconds: float = field(default=0.0, metadata={"help": "stop after this many seconds of training with a "
                                                       "checkpoint, exit code 3; run again with "
                                                       "`--resume_from_checkpoint auto` to go on (0: no limit)"})

    def __post_init__(self) -> None:
        if not self.data:
            raise ValueError("data is not set: the sft file (or directory) written by `kernelgym data export`")
        if self.max_examples < 0:
            raise ValueError(f"max_examples must be >= 0, not {self.max_examples}")
        if self.max_seconds < 0:
            raise ValueError(f"max_seconds must be >= 0, not {self.max_seconds}")


def parse_args(argv: Sequence[str] | None = None) -> tuple[SFTDataArguments, Any, Any]:
    """(SFTDataArguments, SFTConfig, ModelConfig) from `--config FILE.yaml` and command-line overrides."""
    from trl import ModelConfig, SFTConfig, TrlParser

    parser = TrlParser((SFTDataArguments, SFTConfig, ModelConfig))
    return tuple(parser.parse_args_and_config(args=list(argv) if argv is not None else None))


def sft_data_file(path: str | Path) -> Path:
    """The file to train on: `path` itself, the `sft` file of an export directory, or the `train`
    file of a cold-start corpus directory."""
    path = Path(path)
    if path.is_dir():
        for name in ("sft.parquet", "sft.jsonl", "train.parquet", "train.jsonl"):
            if (path / name).is_file():
                return path / name
        raise ValueError(f"{path} holds no sft.parquet/.jsonl (`kernelgym data export --out {path}`) nor "
                         f"train.parquet/.jsonl (`kernelgym data coldstart --out {path}`)")
    if not path.is_file():
        raise ValueError(f"SFT data {path} does not exist")
    return path


def load_sft_dataset(data_args: SFTDataArguments) -> Any:
    """The prompt-completion `datasets.Dataset`, metadata columns dropped (TRL needs the chats only)."""
    from datasets import Dataset

    path = sft_data_file(data_args.data)
    rows = read_table(path)
    if data_args.split and rows and "split" in rows[0]:
        rows = [r for r in rows if r["split"] == data_args.split]
    if data_args.max_examples:
        rows = rows[: data_args.max_examples]
    if not rows:
        raise ValueError(f"{path} has no examples: loosen the export's filters")
    missing = [c for c in CHAT_COLUMNS if c not in rows[0]]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}: expected the exporter's sft or best_of_n rows")
    return Dataset.from_list([{c: row[c] for c in CHAT_COLUMNS} for row in rows])


def build_trainer(data_args: SFTDataArguments, args: Any, model_args: Any) -> Any:
    """The `SFTTrainer` a configuration describes: policy, tokenizer, data and LoRA (when asked)."""
    from trl import SFTTrainer, get_peft_config

    from train.models import load_policy

    dataset = load_sft_dataset(data_args)
    model, tokenizer = load_policy(model_args, args)
    # Training pads on the right; the policy's tokenizer pads on the left for generation.
    tokenizer.padding_side = "right"
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer,
                         peft_config=get_peft_config(model_args))
    check_rows_kept(len(dataset), len(trainer.train_dataset), args.max_length)
    return trainer


def check_rows_kept(given: int, kept: int, max_length: int | None) -> None:
    """TRL drops a row whose prompt alone fills `max_length` (no completion token left to learn from), silently:
    say how many went, and refuse a run with none left (else the sampler fails with `num_samples=0`)."""
    if kept == 0:
        raise ValueError(f"every one of the {given} training rows has a prompt of max_length ({max_length}) tokens "
                         "or more, so no completion token is left to train on: raise --max_length")
    if kept < given:
        log.warning("%d of %d training rows dropped: their prompts fill max_length (%s tokens); raise --max_length "
                    "to keep them", given - kept, given, max_length)


def main(argv: Sequence[str] | None = None) -> dict[str, float]:
    """Train, save to `output_dir`, and return the training metrics. A run stopped by `max_seconds`
    leaves a checkpoint instead of a model and returns `incomplete: 1.0`; a diverged run raises
    `TrainingDiverged` and saves nothing."""
    from train.callbacks import NonFiniteGuard, TimeBudget, TrainingDiverged, resolve_resume

    data_args, args, model_args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    resume = resolve_resume(args.resume_from_checkpoint, args.output_dir)
    trainer = build_trainer(data_args, args, model_args)
    guard = NonFiniteGuard(data_args.max_nonfinite_skips)
    trainer.add_callback(guard)
    budget = TimeBudget(data_args.max_seconds) if data_args.max_seconds else None
    if budget is not None:
        trainer.add_callback(budget)
    if resume:
        log.info("resuming from %s", resume)
    metrics = trainer.train(resume_from_checkpoint=resume).metrics
    if guard.skipped:
        log.warning("skipped %d optimizer step(s) with non-finite gradients: %s", len(guard.skipped), guard.skipped)
        metrics = {**metrics, "skipped_steps": float(len(guard.skipped))}
    if guard.diverged:
        raise TrainingDiverged(f"training diverged at {guard.diverged}; nothing saved. Lower the learning rate, "
                               "or look for broken rows in the data")
    if budget is not None and budget.state.stopped_early:
        log.info("time budget of %.0f s reached at step %d of %d: checkpoint in %s; run the same command with "
                 "--resume_from_checkpoint auto to go on", data_args.max_seconds, budget.state.step,
                 budget.state.max_steps, args.output_dir)
        return {**metrics, "incomplete": 1.0}
    trainer.save_model(args.output_dir)
    log.info("model saved to %s", args.output_dir)
    return metrics


if __name__ == "__main__":
    try:
        result = main()
    except Exception as e:  # a diverged run or a bad argument: one line, not a traceback
        from train.callbacks import TrainingDiverged

        if not isinstance(e, (TrainingDiverged, ValueError)):
            raise
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(1) from None
    raise SystemExit(3 if result.get("incomplete") else 0)
