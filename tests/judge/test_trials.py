"""Correctness trials drawn as they run, and stopped at the first failure (issue 17): a failing
answer gets the verdict it always got, from fewer trials and fewer reference outputs; an answer
that passes still runs every trial."""

import random

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge.reference import Reference
from kernelgym.judge.trials import TrialPlan
from kernelgym.tasks import Task, load_builtin
from tests.answers import relu_answer

# One master seed for both: the same secret trials, so the two runs' trial 0 is the same trial.
CPU = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=7)
EVERY_TRIAL = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, seed=7, stop_at_first_failure=False)
WRONG = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)",
                              "tl.load(x_ptr + offs, mask=m) * 1.001")
# relu is the identity on [0, 1): this copy passes trial 0 (the task's own torch.rand inputs) and
# fails trial 1, the first with values of both signs.
COPY = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)", "tl.load(x_ptr + offs, mask=m)")


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


@pytest.fixture(scope="module")
def rand_relu(relu):
    return Task("relu_rand", relu.source.replace("torch.randn(", "torch.rand("))


@pytest.fixture
def draws(monkeypatch):
    """How many reference draws (secret inputs and their reference output) the judge made."""
    calls = []
    real = Reference.draw

    def counted(self, distribution, next_seed):
        calls.append(distribution)
        return real(self, distribution, next_seed)

    monkeypatch.setattr(Reference, "draw", counted)
    return calls


def test_answer_failing_trial_0_stops_there_with_the_same_verdict(relu, draws):
    stopped = judge(relu, WRONG, CPU)
    n_stopped = len(draws)
    full = judge(relu, WRONG, EVERY_TRIAL)
    assert stopped.status is full.status is Status.WRONG_OUTPUT
    assert not stopped.correct and stopped.compiled
    assert [t.index for t in stopped.trials] == [0] and not stopped.trials[0].passed
    assert len(full.trials) == 7 and not any(t.passed for t in full.trials)
    # the reference drew one trial, not six (five secret trials and the hidden variant's)
    assert n_stopped == 1 and len(draws) - n_stopped == 6
    assert "later trials not run" in stopped.message and "later trials" not in full.message
    assert stopped.trials[0] == full.trials[0]
    assert stopped.message.split("; first: ")[1] == full.message.split("; first: ")[1]


def test_answer_failing_a_later_trial_runs_up_to_it(rand_relu):
    stopped = judge(rand_relu, COPY, CPU)
    full = judge(rand_relu, COPY, EVERY_TRIAL)
    assert stopped.status is full.status is Status.WRONG_OUTPUT
    assert [(t.index, t.passed) for t in stopped.trials] == [(0, True), (1, False)]
    assert stopped.trials[1].distribution == "signed"
    assert len(full.trials) == 7


def test_passing_answer_runs_every_trial(relu, draws):
    r = judge(relu, relu_answer(), CPU)
    assert r.status is Status.OK and r.correct
    assert len(r.trials) == 7 and all(t.passed for t in r.trials)
    assert [t.distribution for t in r.trials][-2:] == ["task+probe", "signed+variant"]  # trial 6: 6 % 5
    assert {t.grad_enabled for t in r.trials} == {False, True}
    assert len(draws) == 6  # 5 secret trials and the variant's; the probe reuses trial 0's inputs


def test_a_crash_in_trial_0_draws_no_later_trial(relu, draws):
    crash = relu_answer(forward_body="import os\nos.abort()")
    r = judge(relu, crash, JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, static_checks=False))
    assert r.status is Status.CRASHED
    assert len(draws) == 1


def test_a_cheat_found_before_the_failure_still_decides_the_verdict(relu):
    """Input mutation (RH-10) is seen in trial 0, whose output is also wrong: still a cheat."""
    mutate = relu_answer(forward_body="x.mul_(2.0)")
    r = judge(relu, mutate, JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, static_checks=False))
    assert r.status is Status.CHEAT and "RH-10" in {c.rule for c in r.cheats}
    assert len(r.trials) == 1


def test_plan_draws_lazily_in_the_judges_order(relu):
    reference = Reference(relu, "small", "cpu", init_seed=1)
    config = JudgeConfig(engine="inprocess", device="cpu", num_trials=3)
    plan = TrialPlan(reference, random.Random(0), config, "cpu")
    assert plan.drawn == []
    first = plan.next()
    assert first.index == 0 and len(plan.drawn) == 1 and first.inputs == []
    rest = []
    assert plan.may_have_more()
    while (t := plan.next()) is not None:
        rest.append(t)
    labels = [first.label] + [t.label for t in rest]
    assert labels == ["task", "signed", "wide", "task+probe", "huge+variant"]  # the variant is trial 4: 4 % 5
    assert [t.grad for t in [first] + rest] == [False, True, False, False, False]
    probe = rest[2]
    assert probe.probe_of is first and probe.seed == first.seed and probe.inputs_digest != first.inputs_digest
    assert not plan.may_have_more()
    assert plan.next() is None and len(plan.drawn) == 5
    assert all(t.integrity for t in plan.drawn)  # on the CPU every trial is an integrity trial


def test_gpu_plan_marks_one_secret_trial_for_integrity(relu):
    reference = Reference(relu, "small", "cpu", init_seed=1)
    plan = TrialPlan(reference, random.Random(3), JudgeConfig(engine="inprocess", device="cpu", num_trials=5), "cuda")
    while plan.next() is not None:
        pass
    marked = [t.index for t in plan.drawn if t.integrity]
    assert marked == [plan.checked] and 0 <= plan.checked < 5


# A relu that computes only as many elements as the published (small) size has: a shrunk variant
# never showed it (issue 26); the grown one does.
SIZE_BOUND = relu_answer().replace("(x, out, x.numel(), BLOCK=1024)", "(x, out, min(x.numel(), 8 * 300), BLOCK=1024)") \
    .replace("torch.empty_like(x)", "torch.zeros_like(x)")


def test_an_answer_bounded_by_the_published_size_fails_the_grown_variant(relu):
    assert "min(x.numel()" in SIZE_BOUND and relu.small_overrides() == {"batch_size": 8, "dim": 300}
    r = judge(relu, SIZE_BOUND, CPU)
    assert r.status is Status.WRONG_OUTPUT, r.message
    assert [t.passed for t in r.trials] == [True] * 6 + [False]
    assert r.trials[-1].distribution.endswith("+variant")


def test_variant_grows_a_size_and_varies_init_arguments():
    conv = load_builtin("conv2d")[0]
    reference = Reference(conv, "small", "cpu", init_seed=1)
    plan = TrialPlan(reference, random.Random(2), JudgeConfig(engine="inprocess", device="cpu", num_trials=1), "cpu")
    while (t := plan.next()) is not None:
        last = t
    variant = last.variant
    assert variant is not None and variant.init_inputs != reference.init_inputs  # kernel size or channels moved
    grown = [k for k, v in variant.overrides.items() if k in conv.small_overrides() and v > conv.small_overrides()[k]]
    assert grown, variant.overrides


def test_trials_carry_the_derived_precision_bound():
    from kernelgym.judge.precision import derived_bound

    reference = Reference(load_builtin("l2_normalize")[0], "small", "cpu", init_seed=1)
    plan = TrialPlan(reference, random.Random(0), JudgeConfig(engine="inprocess", device="cpu", num_trials=2), "cpu")
    first, second, probe = plan.next(), plan.next(), plan.next()
    assert all(derived_bound(t.expected) is not None for t in (first, second, probe))
