"""A LoRA policy merged into one model directory loads through eval's loader and computes what base +
SFT adapter + RL adapter compute."""

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
pytest.importorskip("trl")

from train.merge_policy import main  # noqa: E402
from train.tiny_model import build_tiny_policy  # noqa: E402


def _random_adapter(model, path, seed):
    wrapped = peft.get_peft_model(model, peft.LoraConfig(r=2, lora_alpha=4, target_modules="all-linear"))
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in wrapped.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.3)
    wrapped.save_pretrained(path)
    return wrapped.merge_and_unload()


def test_merged_policy_equals_base_plus_both_adapters(tmp_path):
    from kernelgym.generation.models import load_causal_lm

    model, _ = build_tiny_policy(seed=0)
    ids = torch.arange(16).unsqueeze(0)
    with torch.no_grad():
        plain = model(ids).logits
    model = _random_adapter(model, tmp_path / "sft", seed=1)
    model = _random_adapter(model, tmp_path / "rl", seed=2)
    with torch.no_grad():
        want = model(ids).logits
    assert (want - plain).abs().max() > 1e-2
    assert main(["--model", "kernelgym:tiny", "--adapter", str(tmp_path / "sft"), "--adapter", str(tmp_path / "rl"),
                 "--out", str(tmp_path / "merged"), "--dtype", "float32"]) == 0
    merged, tokenizer = load_causal_lm(str(tmp_path / "merged"), dtype="float32", device="cpu")
    with torch.no_grad():
        got = merged(ids).logits
    assert torch.allclose(got, want, atol=1e-4)
    assert tokenizer.eos_token == "<|im_end|>"


def test_merge_errors_are_one_line(tmp_path, capsys):
    assert main(["--model", "kernelgym:tiny", "--adapter", str(tmp_path / "none"), "--out", str(tmp_path / "o")]) == 2
    assert "is not a peft adapter directory" in capsys.readouterr().err
