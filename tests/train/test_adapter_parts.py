"""Adapter parts: a tiny peft adapter and a fake trainer checkpoint split into small parts, joined back
byte for byte, and every way a carried set can be broken reported by name."""

import json

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")

from train.adapter_parts import MANIFEST, PartsError, join, main, split, verify  # noqa: E402


def _base(seed=0):
    import transformers

    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=4, num_key_value_heads=2)
    torch.manual_seed(seed)
    return transformers.LlamaForCausalLM(config)


def _adapter(path, seed=0):
    """A LoRA adapter of a 2-layer random Llama, B matrices non-zero so that it changes the model."""
    model = peft.get_peft_model(_base(seed), peft.LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_()
    model.save_pretrained(path)
    return model


@pytest.fixture
def checkpoint(tmp_path):
    """A trainer checkpoint-3 around the adapter: optimizer, scheduler, RNG and state, and files left out."""
    ckpt = tmp_path / "run" / "checkpoint-3"
    _adapter(ckpt)
    torch.save({"state": {0: {"exp_avg": torch.randn(300)}}}, ckpt / "optimizer.pt")
    torch.save({"last_epoch": 3}, ckpt / "scheduler.pt")
    torch.save({"python": 1}, ckpt / "rng_state.pth")
    (ckpt / "trainer_state.json").write_text(json.dumps({"global_step": 3, "log_history": []}))
    (ckpt / "tokenizer.json").write_text("{}")
    (ckpt / "training_args.bin").write_bytes(b"x" * 10)
    return ckpt


def test_split_and_join_restore_the_checkpoint_byte_for_byte(checkpoint, tmp_path):
    manifest = split(checkpoint, tmp_path / "parts", part_bytes=4096)
    names = {f.name for f in manifest.files}
    assert names == {"adapter_config.json", "adapter_model.safetensors", "optimizer.pt", "scheduler.pt",
                     "rng_state.pth", "trainer_state.json"}
    assert set(manifest.left_out) == {"tokenizer.json", "training_args.bin", "README.md"}
    assert manifest.optimizer and manifest.global_step == 3 and manifest.name == "checkpoint-3"
    assert len(manifest.parts) > 3 and all(p.size <= 4096 for p in manifest.parts)
    assert sum(p.size for p in manifest.parts) == manifest.size == sum(f.size for f in manifest.files)

    dest = join(tmp_path / "parts", tmp_path / "other" / "run")
    assert dest == tmp_path / "other" / "run" / "checkpoint-3"
    for name in names:
        assert (dest / name).read_bytes() == (checkpoint / name).read_bytes(), name
    assert not (dest / "tokenizer.json").exists()
    assert join(tmp_path / "parts", tmp_path / "other" / "run") == dest  # again: already there, same files


def test_the_full_sft_base_an_rl_adapter_began_on_travels_with_it(checkpoint, tmp_path):
    # launch/rl_check.sh RL_BASE=sftfull: the full SFT model is trained again on every machine; its sha256 goes with
    # the RL checkpoint so that the next machine can say when its re-trained base differs
    (checkpoint / "base_model.sha256").write_text("ba10002e487afb7b\n")
    manifest = split(checkpoint, tmp_path / "parts")
    assert "base_model.sha256" in {f.name for f in manifest.files}
    dest = join(tmp_path / "parts", tmp_path / "next_machine" / "run")
    assert (dest / "base_model.sha256").read_text() == "ba10002e487afb7b\n"


def test_missing_corrupt_and_foreign_parts_are_named(checkpoint, tmp_path):
    parts = tmp_path / "parts"
    manifest = split(checkpoint, parts, part_bytes=4096)
    first, second = parts / manifest.parts[0].name, parts / manifest.parts[1].name
    second.unlink()
    with pytest.raises(PartsError, match=f"lacks 1 of {len(manifest.parts)} parts: {second.name}"):
        join(parts, tmp_path / "out")
    split(checkpoint, parts, part_bytes=4096)
    data = bytearray(first.read_bytes())
    data[100] ^= 0xFF
    first.write_bytes(bytes(data))
    with pytest.raises(PartsError, match=f"corrupt part.*{first.name}"):
        verify(parts)
    assert not (tmp_path / "out").exists(), "nothing is written before every check passed"
    split(checkpoint, parts, part_bytes=4096)
    (parts / MANIFEST).unlink()
    with pytest.raises(PartsError, match="has no manifest.json"):
        verify(parts)


def test_join_refuses_to_overwrite_a_different_directory(checkpoint, tmp_path):
    split(checkpoint, tmp_path / "parts", part_bytes=1 << 20)
    dest = join(tmp_path / "parts", tmp_path / "into")
    (dest / "trainer_state.json").write_text("{}")
    with pytest.raises(PartsError, match="exists and differs"):
        join(tmp_path / "parts", tmp_path / "into")


def test_no_optimizer_and_adapter_only_bundles(checkpoint, tmp_path):
    lean = split(checkpoint, tmp_path / "lean", optimizer=False)
    assert not lean.optimizer
    names = {f.name for f in lean.files}
    assert "optimizer.pt" not in names and "scheduler.pt" not in names  # restored only beside the optimizer
    assert "trainer_state.json" in names  # the step count still continues
    only = split(checkpoint, tmp_path / "only", adapter_only=True)
    assert {f.name for f in only.files} == {"adapter_config.json", "adapter_model.safetensors"}
    assert only.global_step is None


def test_adapter_cast_to_bfloat16_halves_it_and_still_loads(tmp_path):
    from safetensors.torch import load_file

    model = _adapter(tmp_path / "sft")
    full = split(tmp_path / "sft", tmp_path / "fp32", adapter_only=True)
    half = split(tmp_path / "sft", tmp_path / "bf16", adapter_only=True, dtype="bfloat16")
    size = {m.dtype: next(f.size for f in m.files if f.name.endswith(".safetensors")) for m in (full, half)}
    assert size["bfloat16"] < 0.6 * size[None]
    dest = join(tmp_path / "bf16", tmp_path / "restored")
    tensors = load_file(dest / "adapter_model.safetensors")
    assert all(t.dtype == torch.bfloat16 for t in tensors.values())
    ids = torch.arange(10).unsqueeze(0)
    with torch.no_grad():
        want = model(ids).logits
        got = peft.PeftModel.from_pretrained(_base(0), dest)(ids).logits
        plain = _base(0)(ids).logits
    assert (want - plain).abs().max() > 0.1, "the adapter should change the model"
    assert torch.allclose(got, want, atol=0.05 * (want - plain).abs().max().item())
    with pytest.raises(PartsError, match="adapter-only"):
        split(tmp_path / "sft", tmp_path / "x", dtype="bfloat16")


def test_cli_errors_are_one_line(checkpoint, tmp_path, capsys):
    assert main(["split", str(tmp_path / "nowhere"), "--out", str(tmp_path / "p")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["split", str(tmp_path / "empty"), "--out", str(tmp_path / "p")]) == 2
    assert "holds no peft adapter" in capsys.readouterr().err
    assert main(["split", str(checkpoint), "--out", str(tmp_path / "p"), "--part-mib", "17"]) == 2
    assert "at most 16 MiB" in capsys.readouterr().err
    assert main(["split", str(checkpoint), "--out", str(tmp_path / "p"), "--part-mib", "0.01"]) == 0
    assert "global step 3" in capsys.readouterr().out
    assert main(["join", str(tmp_path / "p"), "--into", str(tmp_path / "j")]) == 0
    assert (tmp_path / "j" / "checkpoint-3" / "optimizer.pt").is_file()
    assert main(["verify", str(tmp_path / "nothing")]) == 2
    assert "has no manifest.json" in capsys.readouterr().err
