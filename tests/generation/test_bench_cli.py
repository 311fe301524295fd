"""`kernelgym bench generate`: the decoder bench through the CLI, on a tiny random model on CPU."""

import json

import pytest

pytest.importorskip("transformers")


@pytest.mark.parametrize("backend", ["fast", "hf"])
def test_bench_generate_writes_its_measurement(tmp_path, backend):
    from kernelgym.cli import main

    out = tmp_path / "bench.json"
    rc = main(["bench", "generate", "--model", "random:tiny", "--backend", backend, "--batch", "3",
               "--new-tokens", "5", "--prompt-tokens", "7", "--device", "cpu", "--temperature", "0",
               "--json", str(out)])
    result = json.loads(out.read_text())
    assert rc == 0 and result["backend"] == backend
    assert result["new_tokens"] == 5 and result["batch"] == 3
    assert 3 <= result["runs"][0]["new_tokens"] <= 15  # every row makes a token; an end token may stop one early
    assert result["new_tokens_per_s"] > 0
