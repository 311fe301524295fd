"""Cold-start SFT: exported rows train the tiny model for two steps on CPU through TRL's SFTTrainer."""

import json
import math

import pytest

pytest.importorskip("trl")

from kernelgym.env import EnvConfig, KernelEnv  # noqa: E402
from kernelgym.export.selection import SFT_COLUMNS, SFTFilter, sft_rows  # noqa: E402
from kernelgym.export.tables import features_of, write_table  # noqa: E402
from kernelgym.export.trajectories import EpisodeRecorder  # noqa: E402
from kernelgym.judge.result import EvalResult, Status  # noqa: E402
from kernelgym.tasks import builtin_answer_path  # noqa: E402

CONFIG = "configs/sft_tiny_cpu.yaml"


def _export(tmp_path, n: int = 4):
    """An sft.parquet as `kernelgym data export` writes it: n two-turn relu episodes, fixed on turn 2."""
    answer = f"```python\n{builtin_answer_path('relu').read_text()}\n```"
    trajectories = []
    for i in range(n):
        results = [EvalResult(status=Status.WRONG_OUTPUT, task_id="relu"),
                   EvalResult(status=Status.OK, task_id="relu", compiled=True, correct=True)]
        env = KernelEnv(env_config=EnvConfig(max_turns=2), judge_fn=lambda task, code, cfg, queue=results: queue.pop(0))
        recorder = EpisodeRecorder(f"e{i}", "relu")
        recorder.on_reset(env.reset("relu"))
        for _ in range(2):
            recorder.on_step(answer, env.step(answer))
        trajectories.append(recorder.trajectory())
    rows = sft_rows(trajectories, SFTFilter())
    assert len(rows) == n and all(r["turn"] == 1 for r in rows)
    return write_table(rows, tmp_path / "sft", "parquet", lambda: features_of(SFT_COLUMNS))


def test_sft_runs_two_steps_on_the_exported_chats(tmp_path):
    from train.sft import main

    path = _export(tmp_path)
    metrics = main(["--config", CONFIG, "--data", str(tmp_path), "--output_dir", str(tmp_path / "run")])
    assert math.isfinite(metrics["train_loss"]) and metrics["train_loss"] > 0
    assert (tmp_path / "run" / "config.json").is_file()
    assert path.name == "sft.parquet"


def test_sft_refuses_missing_or_empty_data(tmp_path):
    from train.sft import SFTDataArguments, load_sft_dataset

    with pytest.raises(ValueError, match="does not exist"):
        load_sft_dataset(SFTDataArguments(data=str(tmp_path / "nope.parquet")))
    with pytest.raises(ValueError, match="holds no sft"):
        load_sft_dataset(SFTDataArguments(data=str(tmp_path)))
    write_table([], tmp_path / "sft", "jsonl")
    with pytest.raises(ValueError, match="no examples"):
        load_sft_dataset(SFTDataArguments(data=str(tmp_path)))


def test_sft_refuses_when_every_prompt_fills_max_length(tmp_path):
    """TRL drops rows whose prompt alone reaches max_length; with none left the run says why, not a sampler error."""
    from train.sft import build_trainer, parse_args

    _export(tmp_path, n=2)
    data_args, args, model_args = parse_args(["--config", CONFIG, "--data", str(tmp_path),
                                              "--output_dir", str(tmp_path / "run"), "--max_length", "8"])
    with pytest.raises(ValueError, match="raise --max_length"):
        build_trainer(data_args, args, model_args)


def test_sft_time_budget_stops_with_a_checkpoint_and_resumes(tmp_path, monkeypatch):
    """A run over its `max_seconds` stops at a step with a checkpoint and no model; the same command with
    `--resume_from_checkpoint auto` finishes from there."""
    import itertools

    import train.callbacks
    from train.sft import main

    _export(tmp_path)
    ticks = itertools.count(0, 100)  # every look at the clock is 100 s later
    monkeypatch.setattr(train.callbacks, "_now", lambda: next(ticks))
    run = tmp_path / "run"
    args = ["--config", CONFIG, "--data", str(tmp_path), "--output_dir", str(run)]
    first = main([*args, "--max_seconds", "50"])
    assert first["incomplete"] == 1.0
    assert (run / "checkpoint-1").is_dir() and not (run / "config.json").exists()
    second = main([*args, "--resume_from_checkpoint", "auto"])
    assert "incomplete" not in second and (run / "config.json").is_file()
    state = json.loads((run / "checkpoint-1" / "trainer_state.json").read_text())
    assert state["global_step"] == 1 and second["train_loss"] > 0


def test_sft_stops_and_saves_nothing_when_training_diverges(tmp_path):
    from train.callbacks import TrainingDiverged
    from train.sft import main

    _export(tmp_path)
    run = tmp_path / "run"
    with pytest.raises(TrainingDiverged, match="diverged at step"):
        main(["--config", CONFIG, "--data", str(tmp_path), "--output_dir", str(run), "--max_steps", "8",
              "--learning_rate", "1e38", "--max_grad_norm", "0"])
    assert not (run / "config.json").exists()


def test_non_finite_guard_skips_a_bad_step_and_stops_a_run_of_them(tmp_path):
    import torch
    from transformers import TrainerControl, TrainerState

    from train.callbacks import NonFiniteGuard, resolve_resume

    model = torch.nn.Linear(3, 2)
    guard, state, control = NonFiniteGuard(max_skips=1), TrainerState(global_step=7), TrainerControl()

    def step(grad_value: float) -> None:
        for p in model.parameters():
            p.grad = torch.full_like(p, grad_value)
        guard.on_pre_optimizer_step(None, state, control, model=model)

    step(0.5)
    assert guard.skipped == [] and model.weight.grad.eq(0.5).all()
    step(float("nan"))  # one bad batch: its gradients are zeroed, training goes on
    assert guard.skipped == [7] and model.weight.grad.eq(0).all() and model.bias.grad.eq(0).all()
    assert not control.should_training_stop and guard.diverged is None
    step(1.0)  # a good step resets the count
    state.global_step = 9
    step(float("inf"))
    step(float("nan"))  # two in a row with max_skips=1: diverged
    assert guard.skipped == [7, 9, 9] and control.should_training_stop
    assert guard.diverged == "step 9: 2 optimizer steps in a row with non-finite gradients"
    control.should_save = True
    guard.on_step_end(None, state, control)
    assert control.should_save is False

    logged = NonFiniteGuard()
    logged.on_log(None, state, control := TrainerControl(), logs={"loss": float("nan")})
    assert control.should_training_stop and logged.diverged == "step 9: loss=nan"

    assert resolve_resume("auto", tmp_path / "absent") is None and resolve_resume(None, tmp_path) is None
    (tmp_path / "checkpoint-3").mkdir()
    (tmp_path / "checkpoint-12").mkdir()
    assert resolve_resume("auto", tmp_path).endswith("checkpoint-12")
    with pytest.raises(ValueError, match="not a checkpoint directory"):
        resolve_resume(str(tmp_path / "nope"), tmp_path)


def test_loading_a_policy_turns_cudnn_attention_off():
    import torch

    from train.models import load_policy

    class Args:
        seed = 0

    class ModelArgs:
        model_name_or_path = "kernelgym:tiny"
        dtype = None

    torch.backends.cuda.enable_cudnn_sdp(True)
    try:
        load_policy(ModelArgs(), Args())
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(True)
