"""Trainer callbacks for runs on lent machines: stop on a wall-clock budget with a checkpoint to resume
from, and stop at once when training diverges.

A device call lasts at most ten minutes and a full fine-tuning epoch can take longer, so a run has to
end cleanly before the call does and carry on in the next call from where it stopped (`TimeBudget` +
`resume_from_checkpoint: auto`). A run whose gradients went non-finite has destroyed its weights at
the next optimizer step; every further step is wasted device time and its checkpoint is worthless, so
`NonFiniteGuard` skips a step with non-finite gradients and ends a run that keeps making them (the first
Qwen2.5-Coder SFT on the H100 ran 80 steps of NaN after one bad step near step 12).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import TrainerCallback

_now = time.monotonic  # the budget's clock (tests replace it)

# `resume_from_checkpoint` values that mean "the newest checkpoint in output_dir, if there is one"
AUTO_RESUME = ("auto", "last", "true")


class TrainingDiverged(RuntimeError):
    """The loss or the gradient norm became NaN or infinite."""


@dataclass
class BudgetState:
    """What `TimeBudget` decided, for the caller to report."""

    stopped_early: bool = False
    step: int = 0
    max_steps: int = 0


class TimeBudget(TrainerCallback):
    """Stop within `max_seconds` of training (the clock starts at `on_train_begin`), saving a checkpoint
    at the step where it stops, so that a later run with `resume_from_checkpoint: auto` goes on with
    the same optimizer, scheduler and data order. A step is not begun when the longest step so far
    would end past the budget: an RL step takes minutes, and a call's hard limit kills what overruns."""

    def __init__(self, max_seconds: float, clock: Callable[[], float] | None = None) -> None:
        if max_seconds <= 0:
            raise ValueError(f"max_seconds must be > 0, not {max_seconds}")
        self.max_seconds = max_seconds
        self.clock = clock or (lambda: _now())
        self.start: float | None = None
        self.last = 0.0  # the clock at the end of the previous step
        self.longest = 0.0  # the longest step so far
        self.state = BudgetState()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.start = self.last = self.clock()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.start is None:
            return control
        now = self.clock()
        self.longest, self.last = max(self.longest, now - self.last), now
        if now - self.start + self.longest < self.max_seconds:
            return control
        if state.global_step < state.max_steps:
            control.should_save = True
            self.state = BudgetState(stopped_early=True, step=state.global_step, max_steps=state.max_steps)
        control.should_training_stop = True
        return control


class NonFiniteGuard(TrainerCallback):
    """Skip an optimizer step whose gradients hold a NaN or an infinity, as loss scalers do: its
    gradients are zeroed before the step, so the weights are not destroyed by one bad batch. More than
    `max_skips` such steps in a row, or a non-finite logged loss, ends training (the weights or the data
    are broken, and every further step is wasted device time); `diverged` then says where, and
    `skipped` lists the optimizer steps skipped (0-based, as `state.global_step` was then)."""

    def __init__(self, max_skips: int = 3) -> None:
        if max_skips < 0:
            raise ValueError(f"max_skips must be >= 0, not {max_skips}")
        self.max_skips = max_skips
        self.diverged: str | None = None
        self.skipped: list[int] = []
        self._in_a_row = 0

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None,
                              **kwargs: Any) -> Any:
        grads = [p.grad for p in model.parameters() if p.grad is not None] if model is not None else []
        if not grads or _all_finite(grads):
            self._in_a_row = 0
            return control
        torch._foreach_zero_(grads)
        self.skipped.append(state.global_step)
        self._in_a_row += 1
        if self._in_a_row > self.max_skips:
            self._stop(state, control, f"{self._in_a_row} optimizer steps in a row with non-finite gradients")
        return control

    def on_log(self, args: Any, state: Any, control: Any, logs: dict[str, Any] | None = None,
               **kwargs: Any) -> Any:
        if logs and "loss" in logs and not _finite(logs["loss"]):
            self._stop(state, control, f"loss={logs['loss']}")
        return control

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> Any:
        if self.diverged is not None:  # never let another callback save broken weights
            control.should_save = False
        return control

    def _stop(self, state: Any, control: Any, why: str) -> None:
        if self.diverged is None:
            self.diverged = f"step {state.global_step}: {why}"
        control.should_training_stop = True
        control.should_save = False


def _all_finite(tensors: list[torch.Tensor]) -> bool:
    """One reduction per tensor: a NaN or an infinity anywhere makes that tensor's norm non-finite."""
    norms = torch._foreach_norm([t.float() if t.dtype not in (torch.float32, torch.float64) else t
                                 for t in tensors])
    return bool(torch.isfinite(torch.stack([n.to(norms[0].device) for n in norms])).all())


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return True  # not a number: nothing to judge


def resolve_resume(value: str | bool | None, output_dir: str | Path) -> str | None:
    """`resume_from_checkpoint` as the trainer needs it: `auto` (also `last`, `true`) becomes the newest
    `checkpoint-N` in `output_dir`, or None for a first run, so the same command starts and resumes."""
    if value is None or value is False or value == "":
        return None
    if value is True or (isinstance(value, str) and value.lower() in AUTO_RESUME):
        from transformers.trainer_utils import get_last_checkpoint

        out = Path(output_dir)
        return get_last_checkpoint(str(out)) if out.is_dir() else None
    path = Path(value)
    if not path.is_dir():
        raise ValueError(f"resume_from_checkpoint {value} is not a checkpoint directory "
                         f"(or use 'auto' for the newest in {output_dir})")
    return str(path)
