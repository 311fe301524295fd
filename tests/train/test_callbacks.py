"""TimeBudget on a simulated clock: it stops before a step that would end past the budget."""

import pytest

pytest.importorskip("transformers")
from transformers import TrainerControl, TrainerState  # noqa: E402

from train.callbacks import TimeBudget  # noqa: E402


def _run(budget, step_seconds, max_steps=10):
    """Steps of the given durations until the budget stops them; (steps done, end time, control)."""
    now = [0.0]
    cb = TimeBudget(budget, clock=lambda: now[0])
    state, control = TrainerState(max_steps=max_steps), TrainerControl()
    cb.on_train_begin(None, state, control)
    for seconds in step_seconds:
        now[0] += seconds
        state.global_step += 1
        cb.on_step_end(None, state, control)
        if control.should_training_stop:
            break
    return state.global_step, now[0], control, cb


def test_a_step_that_would_overrun_the_budget_is_not_begun():
    steps, end, control, cb = _run(250, [100] * 10)
    assert steps == 2 and end == 200  # a third 100 s step would have ended at 300 > 250
    assert control.should_save and cb.state.stopped_early and cb.state.step == 2


def test_the_longest_step_so_far_is_the_estimate():
    steps, end, _, _ = _run(350, [150, 20, 20, 20, 20])
    assert steps == 4 and end == 210  # 210 + 150 > 350: stop although the last steps were short


def test_a_run_that_fits_is_not_stopped():
    steps, _, control, cb = _run(1000, [100] * 3, max_steps=3)
    assert steps == 3 and not control.should_training_stop and not cb.state.stopped_early
