"""Hidden variants (RH-15, RH-16): secret changes of a task's constants, and the judge's use of them."""

import random

import pytest

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.result import Status
from kernelgym.tasks import builtin_task_ids, load_builtin
from kernelgym.tasks.loaders import builtin_answer_path
from kernelgym.tasks.task import Task, TaskError, inputs_only_source
from kernelgym.tasks.variants import candidate_variants


def test_first_variant_grows_one_size_and_moves_the_structure_fallbacks_shrink():
    task = load_builtin("conv2d")[0]
    small = task.small_overrides()
    for seed in range(5):
        grown, alone, *rest = candidate_variants(task, "small", random.Random(seed), attempts=6)
        (name, value), = alone.items()  # one size grows, by an odd amount, up to ~1.5x
        assert small[name] < value <= 1.5 * small[name] + 1 and (value - small[name]) % 2 == 1
        assert grown[name] == value and set(grown) - {name} <= {"kernel_size", "out_channels"}
        assert grown["kernel_size"] in (2, 4)  # 3 moved by one: the structure varies too
        shrunk = rest[0]
        assert all(1 <= shrunk[n] < small[n] for n in ("batch_size", "height", "width"))
    slope = candidate_variants(load_builtin("leaky_relu")[0], "full", random.Random(0))[0]["negative_slope"]
    assert 0.015 <= slope <= 0.025


def test_growth_stays_within_the_footprint_budget_and_axes_stay():
    from kernelgym.tasks.small import SmallPlan, estimate
    from kernelgym.tasks.variants import GROWTH_ELEMENTS, GROWTH_FLOPS

    task = load_builtin("matmul_square")[0]
    base = estimate(task.source, SmallPlan({}, 0, 0))
    for seed in range(5):
        grown = candidate_variants(task, "full", random.Random(seed))[0]
        elements, flops = estimate(task.source, SmallPlan(grown, 0, 0))
        assert grown["N"] > task.load_module("full").N
        assert elements <= GROWTH_ELEMENTS * base[0] and flops <= GROWTH_FLOPS * base[1]
    reduce = candidate_variants(load_builtin("sum_reduction_dim")[0], "small", random.Random(0), attempts=6)
    assert not any("reduce_dim" in v for v in reduce)  # an axis is not a size


def test_variants_depend_on_the_secret_seed():
    task = load_builtin("relu")[0]
    drawn = {tuple(sorted(candidate_variants(task, "small", random.Random(s))[0].items())) for s in range(20)}
    assert len(drawn) > 10


def test_declared_variants_replace_the_default_and_an_empty_list_turns_them_off():
    base = load_builtin("relu")[0].source
    task = Task("t", base + "\nKERNELGYM_VARIANTS = {'small': [{'dim': 17}], 'full': []}\n")
    assert candidate_variants(task, "small", random.Random(0)) == [{"dim": 17}]
    assert candidate_variants(task, "full", random.Random(0)) == []
    with pytest.raises(TaskError, match="KERNELGYM_VARIANTS"):
        candidate_variants(Task("t", base + "\nKERNELGYM_VARIANTS = [1]\n"), "small", random.Random(0))


@pytest.mark.parametrize("task_id", builtin_task_ids())
def test_inputs_only_source_keeps_inputs_and_nothing_of_the_reference(task_id):
    task = load_builtin(task_id)[0]
    source = inputs_only_source(task.source)
    assert "nn.Module" not in source and "forward" not in source and '"""' not in source
    full, stripped = task.load_module("small"), Task("s", source).load_module("small")
    import torch

    torch.manual_seed(0)
    a = full.get_inputs()
    torch.manual_seed(0)
    b = stripped.get_inputs()
    assert all(torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(a, b))


def test_a_variant_the_reference_cannot_run_is_skipped():
    # group_norm: channels must stay divisible by the groups; the all-sizes variant often breaks
    # that and the judge falls back to one the reference runs
    answer = builtin_answer_path("group_norm").read_text()
    r = judge(load_builtin("group_norm")[0], answer, JudgeConfig(device="cpu", seed=4, static_checks=False))
    assert r.status is Status.OK, r.message
    assert r.trials[-1].distribution.endswith("+variant")
