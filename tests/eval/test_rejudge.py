"""Numbers anyone can re-check: run.json records the exact command, the commit and the model's
provenance, and `kernelgym eval --rejudge RUN` judges RUN's stored answers again without a model."""

import json
import subprocess
from pathlib import Path

import pytest

from kernelgym.cli import main
from kernelgym.eval import provenance
from kernelgym.eval.provenance import QWEN_CODER_NOTE, QWEN_CODER_TIED_NAME, command_line, git_commit, model_provenance
from tests.eval.conftest import RELU_OK

pytestmark = pytest.mark.timeout(300)
ROOT = Path(__file__).resolve().parents[2]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _statuses(run: Path) -> dict[tuple, str]:
    return {(r["task_id"], r["sample"], r["turn"]): r["status"] for r in _lines(run / "results.jsonl")}


def test_run_records_its_command_commit_and_model_and_rejudge_needs_no_model(scripted_endpoint, tmp_path):
    api_base, model = scripted_endpoint
    out, again = tmp_path / "run", tmp_path / "again"
    argv = ["eval", "--model", "scripted", "--api-base", api_base, "--tasks", "relu,softmax", "--samples", "2",
            "--judge-devices", "cpu", "--judge-jobs", "2", "--trials", "1", "--no-audit", "--out", str(out),
            "--no-progress", "--model-note", "a scripted test endpoint"]
    assert main(argv) == 0
    run = json.loads((out / "run.json").read_text())
    (call,) = run["invocations"]
    assert call["command"] == command_line(argv) and call["command"].startswith("kernelgym eval --model scripted")
    if (ROOT / ".git").exists():  # the checkout's commit (or one before it: others may commit meanwhile)
        assert subprocess.run(["git", "merge-base", "--is-ancestor", call["commit"], "HEAD"], cwd=ROOT).returncode == 0
    else:
        assert call["commit"] == "unknown"
    assert call["dirty"] in (True, False, None)
    assert run["model_provenance"] == {"spec": "scripted", "backend": "openai", "kind": "endpoint",
                                       "api_base": api_base, "note": "a scripted test endpoint"}
    report = (out / "report.md").read_text()
    assert call["command"] in report and "a scripted test endpoint" in report
    before = _statuses(out)
    assert before == {("relu", 0, 1): "ok", ("relu", 1, 1): "cheat", ("softmax", 0, 1): "invalid_answer",
                      ("softmax", 1, 1): "wrong_output"}

    # The stored text is what gets judged: relu sample 1's cheat, replaced by the correct answer, now passes.
    gens = _lines(out / "generations.jsonl")
    for g in gens:
        if (g["task_id"], g["sample"]) == ("relu", 1):
            g["text"] = RELU_OK
    (out / "generations.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    model.requests.clear()
    assert main(["eval", "--rejudge", str(out), "--out", str(again), "--judge-devices", "cpu", "--no-audit",
                 "--no-progress"]) == 0
    assert model.requests == []  # no model was asked
    assert _statuses(again) == {**before, ("relu", 1, 1): "ok"}
    # judged anew (a fresh store): only one of relu's two now identical answers can come from the other's verdict
    cached = [(r["task_id"], r["sample"]) for r in _lines(again / "results.jsonl") if r["cached"]]
    assert len(cached) <= 1 and set(cached) <= {("relu", 0), ("relu", 1)}
    rerun = json.loads((again / "run.json").read_text())
    assert rerun["generator"]["rejudged_from"] == str(out) and rerun["model_provenance"] == run["model_provenance"]
    assert rerun["original_invocations"] == run["invocations"] and "--rejudge" in rerun["invocations"][0]["command"]
    assert rerun["config"] == run["config"]  # the stored judge settings
    assert "re-judged from" in (again / "report.md").read_text()


def test_rejudge_refuses_what_it_cannot_do(tmp_path, capsys):
    assert main(["eval", "--rejudge", str(tmp_path), "--out", str(tmp_path / "x")]) == 2
    assert "run.json and generations.jsonl" in capsys.readouterr().err
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "generations.jsonl").write_text("")
    assert main(["eval", "--rejudge", str(tmp_path)]) == 2
    assert "--rejudge needs --out" in capsys.readouterr().err
    assert main(["eval", "--rejudge", str(tmp_path), "--out", str(tmp_path / "x"), "--model", "m"]) == 2
    assert "takes no --model" in capsys.readouterr().err


def test_model_provenance_hashes_weights_and_names_the_qwen_gguf(tmp_path, monkeypatch):
    weights = tmp_path / QWEN_CODER_TIED_NAME
    weights.write_bytes(b"GGUF not really")
    plain = model_provenance(f"gguf:{weights}", "transformers")
    assert plain["kind"] == "gguf" and len(plain["sha256"]) == 64 and plain["bytes"] == 15
    assert plain["note"].startswith("derived from " + QWEN_CODER_NOTE)  # named like the Qwen file, other bytes
    monkeypatch.setitem(provenance.KNOWN_FILES, plain["sha256"], "the known file")
    assert model_provenance(f"gguf:{weights}", "transformers", note="mine")["note"] == "the known file; mine"

    sft = tmp_path / "sft"
    sft.mkdir()
    (sft / "model.safetensors").write_bytes(b"weights")
    (sft / "config.json").write_text(json.dumps({"_name_or_path": "/tmp/carry", "architectures": ["Qwen2"]}))
    record = model_provenance(str(sft), "transformers")
    assert record["kind"] == "directory" and set(record["files"]) == {"model.safetensors"}
    assert record["note"] == ""  # nothing in the directory says where it came from: --model-note says it
    (sft / "config.json").write_text(json.dumps({"_name_or_path": f"/tmp/carry/{QWEN_CODER_TIED_NAME}"}))
    assert model_provenance(str(sft), "transformers")["note"].startswith("derived from " + QWEN_CODER_NOTE)
    assert model_provenance("org/some-model", "transformers")["kind"] == "hub"


def test_commit_of_a_tree_without_git_comes_from_what_prepare_recorded(tmp_path, monkeypatch):
    # a GPU machine gets a copy of the tree without .git: the eval's run.json then names the commit that
    # launch/rl_check.sh's prepare recorded, and says where the commit came from
    monkeypatch.delenv("KERNELGYM_COMMIT", raising=False)
    assert git_commit(tmp_path) == {"commit": "unknown", "dirty": None}
    monkeypatch.setenv("KERNELGYM_COMMIT", "b5392dd0123+dirty")
    assert git_commit(tmp_path) == {"commit": "b5392dd0123", "dirty": True, "commit_source": "KERNELGYM_COMMIT"}
    monkeypatch.setenv("KERNELGYM_COMMIT", "b5392dd0123")
    assert git_commit(tmp_path)["dirty"] is False
