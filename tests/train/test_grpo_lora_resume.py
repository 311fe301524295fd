"""RL from an SFT LoRA adapter that outlives its machine (issue 27): the tiny model with a random "SFT"
adapter merged in, RL's own LoRA trained a step, its checkpoint split into parts (with and without the
optimizer's state), the run directory deleted (a new machine), the parts joined, and runs that go on
from them."""

import json
import logging
import shutil

import pytest

pytest.importorskip("trl")
torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from train.adapter_parts import join, split  # noqa: E402
from train.config import parse_args  # noqa: E402
from train.grpo import build_trainer, main  # noqa: E402
from train.tiny_model import build_tiny_policy  # noqa: E402

CONFIG = "configs/tiny_cpu.yaml"
LORA = ["--use_peft", "true", "--lora_r", "4", "--lora_alpha", "8", "--lora_dropout", "0",
        "--lora_target_modules", "all-linear"]


def _sft_adapter(path):
    """A LoRA adapter of the tiny policy with non-zero B matrices (an untrained one would change nothing)."""
    model, _ = build_tiny_policy(seed=0)
    sft = peft.get_peft_model(model, peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    gen = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for name, p in sft.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
    sft.save_pretrained(path)
    return sft


def _cmd(out, sft, *extra):
    return ["--config", CONFIG, "--output_dir", str(out), "--tasks", "relu", "--report_to", "none",
            "--base_adapter", str(sft), *LORA, "--save_steps", "1", "--save_total_limit", "1", *extra]


class _AtStart:
    """Reads the trainer at `on_train_begin`, after a resume loaded its checkpoint."""

    def __init__(self, trainer):
        self.trainer, self.seen = trainer, {}

    def __getattr__(self, name):  # every other callback event: nothing to do
        if name.startswith("on_"):
            return lambda *a, **k: None
        raise AttributeError(name)

    def on_train_begin(self, args, state, control, **kwargs):
        model = self.trainer.model
        self.seen = {"step": state.global_step, "optimizer_state": len(self.trainer.optimizer.state),
                     "lora": {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}}


def test_rl_starts_from_the_sft_adapter_and_resumes_from_its_parts(tmp_path, caplog):
    sft_model = _sft_adapter(tmp_path / "sft")
    first, parts, second = tmp_path / "machine1", tmp_path / "parts", tmp_path / "machine2"

    kg, args, model_args = parse_args(_cmd(first, tmp_path / "sft", "--max_steps", "1"))
    trainer = build_trainer(kg, args, model_args)
    ids = torch.arange(12).unsqueeze(0)
    with torch.no_grad(), trainer.model.disable_adapter():  # RL's adapter off: the policy is base + SFT
        got = trainer.model(ids).logits
    with torch.no_grad():
        want = sft_model(ids).logits
        plain = build_tiny_policy(seed=0)[0](ids).logits
    assert (want - plain).abs().max() > 1e-2, "the SFT adapter should change the policy"
    assert torch.allclose(got, want, atol=1e-4)
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable), "RL trains its own adapter only"
    trainer.train()
    ckpt = first / "checkpoint-1"
    manifest = split(ckpt, parts, part_bytes=64 << 10)
    assert manifest.optimizer and manifest.global_step == 1 and len(manifest.parts) >= 2
    split(ckpt, tmp_path / "lean_parts", optimizer=False)
    saved = {k: v.clone() for k, v in _lora_weights(ckpt).items()}
    shutil.rmtree(first)  # the machine is gone: only the parts came back

    restored = join(parts, second)
    assert restored == second / "checkpoint-1"
    kg, args, model_args = parse_args(_cmd(second, tmp_path / "sft", "--max_steps", "2",
                                           "--resume_from_checkpoint", "auto"))
    trainer = build_trainer(kg, args, model_args)
    probe = _AtStart(trainer)
    trainer.add_callback(probe)
    trainer.train(resume_from_checkpoint=str(restored))
    assert probe.seen["step"] == 1 and probe.seen["optimizer_state"] > 0, "step and optimizer continue"
    loaded = {_key(n): p for n, p in probe.seen["lora"].items()}
    assert set(saved) == set(loaded) and all(torch.equal(saved[k], loaded[k]) for k in saved)
    state = json.loads((second / "checkpoint-2" / "trainer_state.json").read_text())
    assert state["global_step"] == 2
    assert [h["step"] for h in state["log_history"] if "loss" in h] == [1, 2]

    # carried without optimizer.pt (smaller): the same command goes on and says the optimizer restarts
    join(tmp_path / "lean_parts", tmp_path / "machine3")
    with caplog.at_level(logging.WARNING, logger="train.grpo"):
        assert main(_cmd(tmp_path / "machine3", tmp_path / "sft", "--max_steps", "2",
                         "--resume_from_checkpoint", "auto")) == 0
    assert "without optimizer state: the optimizer and the learning-rate schedule restart" in caplog.text
    assert json.loads((tmp_path / "machine3" / "trainer_state.json").read_text())["global_step"] == 2
    assert (tmp_path / "machine3" / "adapter_model.safetensors").is_file()  # the final save: the adapter alone


def test_base_adapter_errors_say_what_to_do(tmp_path):
    (tmp_path / "parts").mkdir()
    (tmp_path / "parts" / "manifest.json").write_text("{}")
    kg, args, model_args = parse_args(_cmd(tmp_path / "o", tmp_path / "parts", "--max_steps", "1"))
    with pytest.raises(ValueError, match="python -m train.adapter_parts join"):
        build_trainer(kg, args, model_args)


def _lora_weights(ckpt):
    from safetensors.torch import load_file

    return load_file(ckpt / "adapter_model.safetensors")


def _key(name):
    """A live parameter's name as peft saves it (no adapter name, no base_model prefix differences)."""
    return name.replace(".default", "")
