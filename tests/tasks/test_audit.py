import json

import pytest
import torch
from rich.console import Console

from kernelgym.judge.config import JudgeConfig
from kernelgym.tasks import Task, load_builtin
from kernelgym.tasks.audit import audit_table, audit_task, audit_tasks

# The audit's own distributions (the judge's precision draws, offset and huge, are not what it audits).
CPU = JudgeConfig(device="cpu", distributions=("task", "signed", "wide"))


def _task(forward: str, inputs: str = "torch.randn(batch_size, dim)", init: str = "",
          task_id: str = "t") -> Task:
    """A small task whose forward body is `forward` (a `return ...` expression of x)."""
    source = f'''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        {init or "pass"}
    def forward(self, x):
        return {forward}

batch_size = 8
dim = 300
KERNELGYM_SMALL = {{"batch_size": 8, "dim": 300}}

def get_inputs():
    return [{inputs}]

def get_init_inputs():
    return []
'''
    return Task(task_id=task_id, source=source)


def test_tiny_output_is_degenerate_for_zeros_and_flagged_by_the_metr_statistic():
    audit = audit_task(_task("x * 0"), CPU)
    assert audit.degenerate
    assert {"zeros", "constant", "row_mean", "stale", "reseed"} <= set(audit.degenerate_controls)
    assert audit.stats["task"].near_zero == 1.0
    assert "near_zero" in audit.suspicious_stats
    assert audit.verdict == "degenerate"


def test_model_returning_zeros_is_degenerate():
    audit = audit_task(_task("torch.zeros_like(x)"), CPU)
    assert "zeros" in audit.degenerate_controls


def test_mean_of_softmax_passes_the_constant_control_but_not_zeros():
    audit = audit_task(_task("torch.softmax(x, dim=-1).mean(dim=-1)"), CPU)  # every value is 1/dim
    assert {"constant", "stale", "reseed"} <= set(audit.degenerate_controls)
    assert "zeros" not in audit.degenerate_controls
    assert audit.stats["signed"].near_mean == 1.0


def test_row_uniform_output_passes_only_the_row_mean_control_among_the_statistics():
    audit = audit_task(_task("x.mean(dim=-1, keepdim=True).expand_as(x).contiguous()"), CPU)
    assert "row_mean" in audit.degenerate_controls
    assert "constant" not in audit.degenerate_controls
    assert "stale" not in audit.degenerate_controls


def test_output_that_ignores_the_input_is_stale_but_not_seed_invariant():
    audit = audit_task(_task("self.w.expand_as(x) + 0 * x", init="self.w = nn.Parameter(torch.randn(300))"), CPU)
    assert "stale" in audit.degenerate_controls  # a cache of the last output passes
    assert "reseed" not in audit.degenerate_controls  # but the weights come from the secret init seed


def test_relu_on_non_negative_inputs_is_identity_under_task_inputs_only():
    # `signed` draws values of both signs even where the task draws torch.rand: a copy of x no longer
    # passes ReLU (the full-size KernelBench audit flagged ReLU, LeakyReLU and ELU while it folded).
    audit = audit_task(_task("torch.relu(x)", inputs="torch.rand(batch_size, dim)"), CPU)
    assert audit.passing["task"] == ["identity[0]"]
    assert audit.passing["signed"] == [] and audit.degenerate_controls == []
    assert audit.verdict == "task-only"


def test_a_reference_that_needs_non_negative_inputs_gets_folded_ones_not_task_ones():
    import random

    from kernelgym.judge.reference import Reference

    ref = Reference(_task("torch.log(x) + torch.sqrt(x)", inputs="torch.rand(batch_size, dim)"), "small", "cpu",
                    init_seed=0)
    used, _, inputs, expected = ref.draw("signed", lambda: random.getrandbits(62))
    assert used == "signed+abs"  # both signs gave NaN; folded keeps the domain and the new scale
    assert bool(torch.isfinite(expected).all()) and float(inputs[0].max()) > 1.0  # not rand's [0, 1)
    raises = Reference(_task("torch.multinomial(x, 1).float()", inputs="torch.rand(batch_size, dim)"), "small",
                       "cpu", init_seed=0)
    assert raises.draw("wide", lambda: random.getrandbits(62))[0] == "wide+abs"  # it raised on negatives
    plain = Reference(_task("torch.relu(x)", inputs="torch.randn(batch_size, dim)"), "small", "cpu", init_seed=0)
    assert plain.draw("signed", lambda: random.getrandbits(62))[0] == "signed"
    assert plain.draw("task", lambda: random.getrandbits(62))[0] == "task"


def test_clamp_to_unit_interval_on_rand_is_identity_under_task_only():
    audit = audit_task(_task("torch.clamp(x, 0.0, 1.0)", inputs="torch.rand(batch_size, dim)"), CPU)
    assert audit.passing["task"] == ["identity[0]"]
    assert audit.passing["signed"] == []
    assert not audit.degenerate
    assert audit.task_only_controls == ["identity[0]"]
    assert audit.verdict == "task-only"
    only_task = audit_task(_task("torch.clamp(x, 0.0, 1.0)", inputs="torch.rand(batch_size, dim)"),
                           JudgeConfig(device="cpu", distributions=("task",)))
    assert only_task.degenerate_controls == ["identity[0]"]


@pytest.mark.parametrize("task_id", ["softmax", "matmul_square", "relu", "argmax_dim"])
def test_healthy_builtin_tasks_pass_no_control(task_id):
    audit = audit_task(load_builtin(task_id)[0], CPU)
    assert audit.error is None
    # wide inputs make softmax nearly one-hot, so a control may pass there alone; a task is only
    # degenerate for the judge when a control passes under every distribution it uses
    assert audit.passing["task"] == [] and audit.passing["signed"] == []
    assert audit.degenerate_controls == [] and audit.verdict == "ok"


def test_audit_is_reproducible_and_serialisable():
    task = load_builtin("softmax")[0]
    a, b = audit_task(task, CPU), audit_task(task, CPU)
    assert a.to_dict() == b.to_dict()
    assert json.loads(json.dumps(a.to_dict()))["verdict"] == "ok"


def test_broken_task_is_reported_not_raised_and_the_table_renders():
    broken = _task("x.no_such_method()", task_id="broken")
    audits = audit_tasks([broken, _task("x * 0", task_id="tiny")], CPU, progress=False)
    assert audits[0].verdict == "error" and "Model.forward failed" in audits[0].error
    assert audits[1].verdict == "degenerate"
    console = Console(width=200, record=True)
    console.print(audit_table(audits))
    text = console.export_text()
    assert "broken" in text and "degenerate" in text and "2 tasks: 1 degenerate" in text


def test_one_trial_is_refused():
    with pytest.raises(ValueError, match="trials >= 2"):
        audit_task(_task("x"), CPU, trials=1)


def test_chunked_statistics_and_parked_trials_give_the_unchunked_answers(monkeypatch):
    """The full-size path (float64 in chunks, trials parked off the device) must not change a verdict
    or a statistic: the same trials, audited both ways, agree exactly."""
    import random

    import torch

    from kernelgym.judge.reference import Reference
    from kernelgym.tasks import audit as audit_mod

    task = _task("torch.where(x > 1.5, x, torch.zeros_like(x)) + 1e-3 * x.mean(dim=1, keepdim=True)")
    ref = Reference(task, "small", "cpu", init_seed=1)
    drawn = audit_mod._draw_trials(ref, ref, "task", 3, random.Random(0), [])
    parked = audit_mod._draw_trials(ref, ref, "task", 3, random.Random(0), [], park=True)
    whole = audit_mod._degeneracy_stats(drawn, CPU)
    passing = audit_mod._passing_controls(drawn, CPU)
    monkeypatch.setattr(audit_mod, "_CHUNK", 7)  # many chunks, a ragged last one
    assert audit_mod._degeneracy_stats(parked, CPU, device="cpu") == whole
    assert audit_mod._passing_controls(parked, CPU, device="cpu") == passing
    assert 0 < whole.near_zero < 1  # the statistics were exercised, not all-or-nothing
    e = drawn[0].expected
    assert torch.equal(audit_mod._constant_fill(e), torch.full_like(e, float(e.double().mean())))
    assert torch.allclose(audit_mod._row_mean(e), e.double().mean(dim=1, keepdim=True).expand(e.shape).float())
