"""The cold-start corpus pipeline: written answers judged on CPU, rows as the environment renders
them, repair examples with the judge's real feedback, a resumable log, and the task set beside it."""

import json
import random
from pathlib import Path

import pytest

from kernelgym.coldstart.answer import write_answer
from kernelgym.coldstart.corpus import ColdstartConfig, build
from kernelgym.coldstart.repair import CORRUPTIONS, corrupt
from kernelgym.env.prompts import first_messages, load_templates
from kernelgym.taskgen.compose import compose, compose_chain


def _rows(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _corpus_rows(config):
    return [r for split in ("train", "heldout") if (Path(config.out) / f"{split}.jsonl").exists()
            for r in _rows(Path(config.out) / f"{split}.jsonl")]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("coldstart")
    # pointwise-only chains of seed 0 are cheap on the interpreter; 2 verified answers, each also corrupted
    config = ColdstartConfig(n=2, out=str(out), repair_fraction=1.0, jobs=2, max_tasks=12, trials=2)
    return config, build(config, progress=False)


def test_corpus_rows_are_verified_and_rendered_as_the_environment_renders_them(corpus):
    config, stats = corpus
    rows = _corpus_rows(config)
    singles = [r for r in rows if r["kind"] == "single"]
    assert len(singles) >= 2 and stats["acceptance_rate"] > 0
    log = {a["key"]: a for a in _rows(Path(config.out) / "judged.jsonl")}
    templates = load_templates()
    for row in singles:
        assert log[f"{row['task_id']}:single:0"]["status"] == "ok"
        cand = compose(config.seed, int(row["task_id"].rsplit("_", 1)[1]))
        assert row["prompt"] == first_messages(cand.task(), templates)
        assert row["completion"] == [{"role": "assistant", "content": f"```python\n{row['answer'].strip()}\n```"}]
        assert "class ModelNew" in row["answer"] and "@triton.jit" in row["answer"]
        assert row["verified_on"] == "cpu-small"


def test_repair_rows_show_a_failing_answer_its_feedback_and_the_verified_fix(corpus):
    config, stats = corpus
    rows = _corpus_rows(config)
    repairs = [r for r in rows if r["kind"] == "repair"]
    assert repairs, stats
    singles = {r["task_id"]: r for r in rows if r["kind"] == "single"}
    for r in repairs:
        assert r["broken_status"] not in ("ok", "")
        roles = [m["role"] for m in r["prompt"]]
        assert roles == ["system", "user", "assistant", "user"]
        assert "The judge evaluated your last answer" in r["prompt"][3]["content"]
        assert r["prompt"][2]["content"] != r["completion"][0]["content"]
        assert r["answer"] == singles[r["task_id"]]["answer"]  # the fix is the verified answer


def test_a_second_build_judges_nothing_again_and_writes_the_task_set(corpus):
    from kernelgym.tasks.loaders import resolve_tasks

    config, _ = corpus
    log = Path(config.out) / "judged.jsonl"
    before = log.read_text()
    build(config, progress=False)
    assert log.read_text() == before
    tasks = resolve_tasks(f"gen:{config.out}/tasks")
    assert tasks and all("class Model" in t.source for t in tasks)


def test_corruptions_change_the_answer_and_are_drawn_reproducibly():
    answer = write_answer(compose_chain(["relu", "sum"], 2, seed=3, index=3), seed=1)
    applied = {name: fn(answer, random.Random(0)) for name, fn in CORRUPTIONS.items()}
    assert all(out is None or out != answer for out in applied.values())
    assert sum(out is not None for out in applied.values()) >= 4
    assert corrupt(answer, random.Random(7)) == corrupt(answer, random.Random(7))


def test_answers_are_deterministic_per_seed_and_vary_across_seeds():
    cand = compose_chain(["gelu", "add_bias", "softmax"], 3, seed=2, index=2)
    assert write_answer(cand, seed=5) == write_answer(cand, seed=5)
    assert len({write_answer(cand, seed=s) for s in range(6)}) > 1


def test_config_rejects_bad_values():
    with pytest.raises(ValueError):
        ColdstartConfig(n=0)
    with pytest.raises(ValueError):
        ColdstartConfig(repair_fraction=2.0)
    with pytest.raises(ValueError):
        ColdstartConfig(device="tpu")


def test_merging_corpora_keeps_each_row_once_and_refuses_other_splits(corpus, tmp_path):
    import shutil

    from kernelgym.coldstart.corpus import merge

    config, _ = corpus
    copy = tmp_path / "copy"
    shutil.copytree(config.out, copy)
    stats = merge([config.out, copy], tmp_path / "merged")
    assert stats["rows"] == len(_corpus_rows(config))  # the same rows twice: kept once
    merged = ColdstartConfig(n=1, out=str(tmp_path / "merged"))
    assert sorted(r["answer"] for r in _corpus_rows(merged)) == sorted(r["answer"] for r in _corpus_rows(config))
    with pytest.raises(ValueError, match="merged corpus"):
        build(merged, progress=False)  # a merged directory is no build target
    meta = json.loads((copy / "corpus.json").read_text())
    (copy / "corpus.json").write_text(json.dumps({**meta, "heldout_fraction": 0.3}))
    with pytest.raises(ValueError, match="different held-out fractions"):
        merge([config.out, copy], tmp_path / "bad")


def test_heldout_tasks_are_composed_until_the_evaluation_split_is_large_enough():
    from kernelgym.coldstart.corpus import _more_heldout, iter_tasks
    from kernelgym.taskgen.splits import split_of

    config = ColdstartConfig(n=1, heldout_tasks=25)
    stream = iter_tasks(config)
    judged = dict((c.task_id, c) for c, _ in (next(stream) for _ in range(15)))
    extra = _more_heldout(config, stream, judged, set())
    assert not set(extra) & set(judged)
    assert all(split_of(c.signature, config.heldout_fraction) == "heldout" for c in extra.values())
    held = [c for c in {**judged, **extra}.values() if split_of(c.signature, config.heldout_fraction) == "heldout"]
    assert len(held) == 25
