"""The reference running out of device memory is no verdict on the task: it is raised as itself, so that
`batch.judge_one` judges again with the device to itself (a broken task would be a `runtime_error`)."""

import pytest
import torch

from kernelgym.judge.reference import Reference
from kernelgym.tasks import load_builtin
from kernelgym.tasks.task import TaskError


def oom_once(ref: Reference) -> list[bool]:
    left = [True]
    forward = ref.model.forward

    def maybe_oom(*args):
        if left:
            left.pop()
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 256.00 MiB (stand-in)")
        return forward(*args)

    ref.model.forward = maybe_oom
    return left


def test_out_of_memory_in_the_reference_is_raised_as_itself():
    ref = Reference(load_builtin("relu")[0], "small", "cpu", init_seed=1)
    inputs = ref.inputs(3, "task")
    oom_once(ref)
    with pytest.raises(torch.OutOfMemoryError):
        ref.expected(inputs, precise=True)
    assert ref.expected(inputs, precise=True) is not None  # the retry


def test_a_draw_does_not_skip_to_another_distribution_on_out_of_memory():
    # before: the OOM was a TaskError, and `draw` moved on to the next distribution as if the task could not
    # run on these values, so the trial silently tested other inputs than it drew
    ref = Reference(load_builtin("relu")[0], "small", "cpu", init_seed=1)
    left = oom_once(ref)
    with pytest.raises(torch.OutOfMemoryError):
        ref.draw("normal", iter(range(1, 100)).__next__)
    assert left == []


def test_a_real_failure_is_still_a_broken_task():
    ref = Reference(load_builtin("relu")[0], "small", "cpu", init_seed=1)

    def broken(*args):
        raise ValueError("shape mismatch")

    ref.model.forward = broken
    with pytest.raises(TaskError, match="Model.forward failed: ValueError"):
        ref.expected(ref.inputs(3, "task"))
