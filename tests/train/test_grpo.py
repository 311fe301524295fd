"""End to end on CPU: two training steps of configs/tiny_cpu.yaml with the real judge, checkpoint
and resume, and the configuration's validation."""

import math

import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")

from kernelgym.tasks import builtin_answer_path
from train.config import parse_args
from train.generation import Generation, make_generator
from train.grpo import build_trainer, resume_target

CONFIG = "configs/tiny_cpu.yaml"


class FirstAnswerIsCorrect:
    """The trainer's own generator, except that the first rollout of each group answers its first turn
    with the built-in relu answer (teacher-forced ids): a random tiny model never passes the judge, and
    a group whose rewards are all equal has zero advantages, so nothing would be learned."""

    def __init__(self, trainer, prompt_len):
        self.inner = make_generator(trainer)
        self.prompt_len = prompt_len
        tok = trainer.processing_class
        answer = f"```python\n{builtin_answer_path('relu').read_text()}\n```"
        self.answer = tok.encode(answer, add_special_tokens=False) + [tok.convert_tokens_to_ids("<|im_end|>")]

    def generate(self, contexts, max_new_tokens):
        out = self.inner.generate(contexts, max_new_tokens)
        for i in range(0, len(contexts), 2):  # num_generations = 2: rollouts 0, 2, ... open their group
            if len(contexts[i]) == self.prompt_len:  # a first turn: the context is the prompt alone
                out[i] = Generation(ids=list(self.answer), logprobs=[math.nan] * len(self.answer))
        return out


def _trainer(tmp_path, *overrides):
    kg, args, model_args = parse_args(["--config", CONFIG, "--output_dir", str(tmp_path), *overrides])
    return build_trainer(kg, args, model_args)


def test_two_steps_of_the_tiny_config_learn_from_the_judge(tmp_path):
    trainer = _trainer(tmp_path, "--tasks", "relu", "--report_to", "none", "--save_strategy", "no",
                       "--max_completion_length", "768")  # room for a second turn after the 309-token answer
    rollout = trainer.rollout_func
    from train.chat_ids import prompt_ids

    first = rollout.make_backend().reset(rollout.tasks["relu"]).messages
    rollout.generator = FirstAnswerIsCorrect(trainer, len(prompt_ids(trainer.processing_class, first)))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()

    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 2 and all(math.isfinite(h["loss"]) for h in logs)
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "no weight moved"
    for h in logs:  # each step: one correct first answer judged ok on CPU (reward 0.5), one invalid answer
        assert h["kernelgym/status/ok"] > 0 and h["kernelgym/correct"] > 0
        assert h["reward"] == pytest.approx(0.25) and h["kernelgym/turns_used"] == 2
        assert h["masked/after_positive"] > 0  # the turn after the correct one earned 0: masked
        assert h["timing/judge_s"] > 0 and h["timing/update_s"] > 0


def test_checkpoints_and_resume(tmp_path):
    pytest.importorskip("tensorboard")  # the tiny config reports to TensorBoard
    trainer = _trainer(tmp_path, "--max_steps", "1", "--save_steps", "1")
    trainer.train()
    assert (tmp_path / "checkpoint-1").is_dir()
    assert any(tmp_path.rglob("events.out.tfevents.*")), "no TensorBoard events"
    resumed = _trainer(tmp_path, "--max_steps", "2", "--save_steps", "1")
    resumed.train(resume_from_checkpoint=resume_target("last", tmp_path))
    assert resumed.state.global_step == 2 and (tmp_path / "checkpoint-2").is_dir()


def test_configuration_errors_name_the_field(tmp_path):
    with pytest.raises(ValueError, match="advantage must be one of"):
        parse_args(["--config", CONFIG, "--advantage", "ppo"])
    with pytest.raises(ValueError, match="max_completion_length"):
        parse_args(["--config", CONFIG, "--max_completion_length", "16"])
    with pytest.raises(ValueError, match="mismatch bounds"):
        parse_args(["--config", CONFIG, "--mismatch_geo_low", "1.5"])
    kg, args, model_args = parse_args(["--config", CONFIG, "--max_turns", "3", "--learning_rate", "1e-5"])
    assert kg.max_turns == 3 and args.learning_rate == 1e-5 and model_args.model_name_or_path == "kernelgym:tiny"
    assert resume_target(None) is None and resume_target("false") is None
    assert resume_target("auto", tmp_path) is None  # a first run: nothing to resume
    (tmp_path / "checkpoint-4").mkdir()
    assert resume_target("last", tmp_path) == str(tmp_path / "checkpoint-4")
    assert resume_target(str(tmp_path / "checkpoint-4")) == str(tmp_path / "checkpoint-4")
    with pytest.raises(ValueError, match="max_seconds"):
        parse_args(["--config", CONFIG, "--max_seconds", "-1"])


def test_main_stops_at_its_time_budget_and_the_same_command_resumes(tmp_path, monkeypatch):
    """`--max_seconds` ends a run at a step with a checkpoint (exit code 3, no model); the same command
    with `--resume_from_checkpoint auto` finishes it. The clock is replaced: 100 s pass per look."""
    import itertools
    import json

    import train.callbacks
    from train.grpo import main

    pytest.importorskip("tensorboard")  # the tiny config reports to TensorBoard
    ticks = itertools.count(0, 100)
    monkeypatch.setattr(train.callbacks, "_now", lambda: next(ticks))
    cmd = ["--config", CONFIG, "--output_dir", str(tmp_path), "--max_steps", "2", "--tasks", "relu",
           "--resume_from_checkpoint", "auto"]
    assert main([*cmd, "--max_seconds", "50"]) == 3
    assert (tmp_path / "checkpoint-1").is_dir() and not (tmp_path / "model.safetensors").exists()
    assert main(cmd) == 0
    state = json.loads((tmp_path / "trainer_state.json").read_text())
    assert state["global_step"] == 2 and (tmp_path / "model.safetensors").exists()


def test_task_curriculum_options_reach_build_trainer_and_refuse_an_empty_pool(tmp_path):
    import json

    kg, _, _ = parse_args(["--config", CONFIG, "--task_max_ops", "2"])
    assert kg.task_max_ops == 2
    with pytest.raises(ValueError, match="task_max_ops must be >= 0"):
        parse_args(["--config", CONFIG, "--task_max_ops", "-1"])
    with pytest.raises(ValueError, match="of at most 1 ops"):
        build_trainer(*parse_args(["--config", CONFIG, "--output_dir", str(tmp_path), "--tasks",
                                   f"gen:{_one_chain(tmp_path)}", "--task_max_ops", "1"]))
    run = tmp_path / "eval_sft_train"
    run.mkdir()
    kg, _, _ = parse_args(["--config", CONFIG, "--task_pass_rates", str(run), "--task_min_pass", "0.1",
                           "--task_max_pass", "0.9"])
    assert (kg.task_pass_rates, kg.task_min_pass, kg.task_max_pass) == (str(run), 0.1, 0.9)
    with pytest.raises(ValueError, match="task_min_pass and task_max_pass"):
        parse_args(["--config", CONFIG, "--task_min_pass", "0.8", "--task_max_pass", "0.2"])
    # a pool the measurement empties is refused with the reason, before any model is loaded
    (run / "results.jsonl").write_text(json.dumps({"task_id": "g", "sample": 0, "turn": 1, "status": "ok"}) + "\n")
    with pytest.raises(ValueError, match=r"pass rate in \[0, 0.9\]"):
        build_trainer(*parse_args(["--config", CONFIG, "--output_dir", str(tmp_path), "--tasks",
                                   f"gen:{_one_chain(tmp_path)}", "--task_pass_rates", str(run),
                                   "--task_max_pass", "0.9"]))


def _one_chain(tmp_path):
    from kernelgym.taskgen.dataset import write_split
    from kernelgym.tasks import load_builtin

    row = {"task_id": "g", "code": load_builtin("relu")[0].source, "split": "train", "num_ops": 2, "ops": ["a", "b"]}
    return write_split([row], tmp_path / "train", "jsonl")
