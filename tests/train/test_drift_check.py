"""drift_check's NLL is the teacher-forced cross-entropy of the answer tokens, and an adapter that changes
nothing (LoRA B at its zero initialisation) measures as the base model."""

import json

import pytest

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
pytest.importorskip("trl")

from train.drift_check import answer_stats, load_examples, main  # noqa: E402
from train.tiny_model import build_tiny_policy  # noqa: E402

ANSWER = "```python\nclass ModelNew(nn.Module):\n    pass\n```"


def _corpus(path):
    rows = [{"task_id": f"t{i}", "kind": "single",
             "prompt": [{"role": "system", "content": "Write Triton."}, {"role": "user", "content": f"task {i}"}],
             "completion": [{"role": "assistant", "content": ANSWER.replace("pass", "x = " + str(i))}]}
            for i in range(3)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_nll_is_the_cross_entropy_of_the_answer_tokens(tmp_path):
    model, tokenizer = build_tiny_policy(seed=0)
    example = load_examples(_corpus(tmp_path / "c.jsonl"), tokenizer, limit=1, seed=0, max_answer_tokens=2048)[0]
    assert example.answer_ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert tokenizer.decode(example.answer_ids[:-1]).startswith("```python\nclass ModelNew")
    ids = torch.tensor([example.prompt_ids + example.answer_ids])
    with torch.no_grad():
        logits = model(ids).logits[0]
    p, n = len(example.prompt_ids), len(example.answer_ids)
    want = torch.nn.functional.cross_entropy(logits[p - 1: p + n - 1], ids[0, p:])
    got = answer_stats(model.eval(), example)
    assert got.tokens == n
    assert got.nll == pytest.approx(float(want), rel=1e-5)
    assert 0 < got.entropy["0.8"] < got.entropy["1"]


def test_zero_initialised_adapter_measures_as_the_base(tmp_path, capsys):
    model, _ = build_tiny_policy(seed=0)
    peft.get_peft_model(model, peft.LoraConfig(r=2, lora_alpha=4, target_modules="all-linear")).save_pretrained(
        tmp_path / "zero")
    out = tmp_path / "drift.json"
    assert main(["--model", "kernelgym:tiny", "--data", str(_corpus(tmp_path / "c.jsonl")), "--limit", "2",
                 "--policy", "base=", "--policy", f"zero={tmp_path / 'zero'}", "--out", str(out)]) == 0
    base, zero = json.loads(out.read_text())["policies"]
    assert [e["nll"] for e in zero["examples"]] == pytest.approx([e["nll"] for e in base["examples"]], abs=1e-6)
    assert zero["nll_minus_first"]["mean"] == pytest.approx(0.0, abs=1e-6)
    assert zero["weight_changes"][0]["max_rel"] == 0.0
    assert "zero" in capsys.readouterr().out
