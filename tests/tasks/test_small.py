"""The small size of KernelBench-style tasks is small: elements and FLOPs under the caps."""

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from kernelgym.tasks.small import MAX_SMALL_ELEMENTS, MAX_SMALL_FLOPS, SmallPlan, TaskTooLarge, estimate
from kernelgym.tasks.task import Task, inputs_only_source
from tests.tasks import kernelbench_style as kb


def _measured(task: Task) -> tuple[int, int]:
    """Elements (inputs, outputs, parameters) and FLOPs of one real forward at the small size."""
    module = task.load_module("small")
    model = module.Model(*module.get_init_inputs())
    inputs = module.get_inputs()
    with torch.no_grad(), FlopCounterMode(display=False) as counter:
        out = model(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    tensors = [*inputs, *outs, *model.parameters()]
    return sum(t.numel() for t in tensors), counter.get_total_flops()


@pytest.mark.parametrize("name", ["MATMUL", "CONV3D", "IMAGE", "SCALE"])
def test_expression_sizes_shrink_under_the_caps(name):
    source = getattr(kb, name)
    full_elements, full_flops = estimate(source, SmallPlan({}, 0))
    assert full_elements > MAX_SMALL_ELEMENTS or full_flops > MAX_SMALL_FLOPS  # the full size would not do
    elements, flops = _measured(Task(name, source))
    assert elements <= MAX_SMALL_ELEMENTS and flops <= MAX_SMALL_FLOPS


def test_products_shifts_unpacking_and_literals_in_get_inputs_all_shrink():
    a, b = Task("mm", kb.MATMUL).load_module("small").get_inputs()
    assert a.shape[0] <= 32 and a.shape[1] == b.shape[0] <= 32 and b.shape[1] <= 32
    image = Task("img", kb.IMAGE).load_module("small")
    x, y = image.get_inputs()
    assert x.shape == y.shape and x.shape[0] == image.batch_size <= 32 and x.shape[2] <= 32
    conv = Task("conv", kb.CONV3D).load_module("small")
    assert conv.out_channels % conv.groups == 0  # the model still builds: structure kept consistent
    assert max(conv.depth, conv.height, conv.width) <= 32


def test_the_stripped_inputs_source_regenerates_the_same_small_inputs():
    for source in (kb.MATMUL, kb.CONV3D, kb.IMAGE):
        torch.manual_seed(0)
        a = Task("t", source).load_module("small").get_inputs()
        torch.manual_seed(0)
        b = Task("s", inputs_only_source(source)).load_module("small").get_inputs()
        assert [x.shape for x in a] == [x.shape for x in b]
        assert all(torch.equal(x, y) for x, y in zip(a, b))


def test_a_task_that_cannot_be_made_small_says_so_and_never_runs_full_size():
    task = Task("huge", kb.HUGE_WEIGHT)
    with pytest.raises(TaskTooLarge, match="cannot be made small"):
        task.load_module("small")
    assert task.load_module("full").batch_size == 8  # full size still loads (for a GPU)
