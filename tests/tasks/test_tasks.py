import pytest

from kernelgym.tasks import (
    Task,
    TaskError,
    builtin_answer_path,
    builtin_task_ids,
    load_builtin,
    load_hf_tasks,
    load_kernelbench_dir,
    resolve_tasks,
)

KB_TASK = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, A, B):
        return torch.matmul(A, B)

N = 2048

def get_inputs():
    return [torch.randn(N, N), torch.randn(N, N)]

def get_init_inputs():
    return []
'''


def test_builtin_set_is_large_and_every_task_has_an_answer():
    ids = builtin_task_ids()
    assert len(ids) >= 40
    for tid in ids:
        assert builtin_answer_path(tid).is_file(), tid


def test_builtin_tasks_cover_the_required_families():
    ids = set(builtin_task_ids())
    for needed in ("relu", "softmax", "log_softmax", "layer_norm", "rms_norm", "matmul_square", "batched_matmul",
                   "conv2d", "attention", "cross_entropy_per_sample", "linear_bias_relu", "add_layer_norm"):
        assert needed in ids


@pytest.mark.parametrize("task_id", builtin_task_ids())
def test_builtin_task_runs_small_and_sizes_differ(task_id):
    task = load_builtin(task_id)[0]
    small = task.load_module("small")
    full = task.load_module("full")
    overrides = task.small_overrides()
    assert overrides, "every built-in task declares KERNELGYM_SMALL"
    for name, value in overrides.items():
        assert getattr(small, name) == value
        assert getattr(full, name) != value or name not in full.__dict__
    import torch

    torch.manual_seed(0)
    model = small.Model(*small.get_init_inputs())
    with torch.no_grad():
        out = model(*small.get_inputs())
    outs = out if isinstance(out, (tuple, list)) else [out]
    assert all(torch.isfinite(o).all() for o in outs if o.is_floating_point())


def test_heuristic_shrinks_kernelbench_constants_without_editing_the_file():
    task = Task(task_id="kb", source=KB_TASK)
    assert task.small_overrides() == {"N": 32}
    assert task.load_module("small").get_inputs()[0].shape == (32, 32)
    assert task.load_module("full").N == 2048


@pytest.mark.parametrize(
    "source, message",
    [
        ("def get_inputs(): return []\ndef get_init_inputs(): return []", "does not define Model"),
        ("class Model: pass\ndef get_init_inputs(): return []", "does not define get_inputs"),
        ("class Model(:", "does not parse"),
        (KB_TASK + "\nraise SystemError('boom')", "executing its source failed"),
    ],
)
def test_broken_task_sources_are_task_errors(source, message):
    with pytest.raises(TaskError, match=message):
        Task(task_id="bad", source=source).load_module("small")


def _make_checkout(root):
    level1 = root / "KernelBench" / "level1"
    level1.mkdir(parents=True)
    (level1 / "1_Square_matmul.py").write_text(KB_TASK)
    (level1 / "10_Other.py").write_text(KB_TASK)
    (level1 / "2_Second.py").write_text(KB_TASK)
    (root / "KernelBench" / "level2").mkdir()
    (root / "KernelBench" / "level2" / "1_Fused.py").write_text(KB_TASK)


def test_kernelbench_checkout_loader(tmp_path):
    _make_checkout(tmp_path)
    tasks = load_kernelbench_dir(tmp_path, level=1)
    assert [t.problem_id for t in tasks] == [1, 2, 10]
    assert tasks[0].task_id == "level1/1_Square_matmul" and tasks[0].level == 1
    assert len(load_kernelbench_dir(tmp_path)) == 4
    assert len(resolve_tasks(f"kernelbench:{tmp_path}:level2")) == 1
    with pytest.raises(TaskError, match="no level3"):
        load_kernelbench_dir(tmp_path, level=3)
    with pytest.raises(TaskError, match="not a KernelBench checkout"):
        load_kernelbench_dir(tmp_path / "KernelBench" / "level1")


def test_hf_dataset_loader_on_a_local_copy_in_the_hub_schema(tmp_path):
    datasets = pytest.importorskip("datasets")
    dd = datasets.DatasetDict({
        "level_1": datasets.Dataset.from_dict(
            {"code": [KB_TASK, KB_TASK], "level": [1, 1], "name": ["1_Square_matmul", "2_Second"], "problem_id": [1, 2]}),
        "level_2": datasets.Dataset.from_dict(
            {"code": [KB_TASK], "level": [2], "name": ["1_Fused"], "problem_id": [1]}),
    })
    dd.save_to_disk(str(tmp_path / "kb"))
    tasks = load_hf_tasks(str(tmp_path / "kb"), split="level_1")
    assert [t.task_id for t in tasks] == ["level1/1_Square_matmul", "level1/2_Second"]
    assert len(resolve_tasks(f"hf:{tmp_path / 'kb'}")) == 3
    assert len(resolve_tasks(f"hf:{tmp_path / 'kb'}:level_2")) == 1
    with pytest.raises(TaskError, match="no split"):
        load_hf_tasks(str(tmp_path / "kb"), split="level_9")


def test_resolve_unknown_spec_is_a_clear_error():
    with pytest.raises(TaskError, match="unknown built-in task"):
        resolve_tasks("no_such_task")
    with pytest.raises(TaskError, match="cannot resolve"):
        resolve_tasks("not/a/path.py")
