"""The pipeline: the same accepted set for a seed whatever the parallelism, stats, files, loader, CLI."""

import json

import pytest

from kernelgym.cli import main
from kernelgym.taskgen.build import BuildConfig, generate_tasks, write_outputs
from kernelgym.taskgen.validate import REASONS
from kernelgym.tasks.loaders import resolve_tasks


def test_generation_is_deterministic_for_a_seed_whatever_the_jobs():
    one = generate_tasks(BuildConfig(n=12, seed=3, jobs=1), progress=False)
    two = generate_tasks(BuildConfig(n=12, seed=3, jobs=2), progress=False)
    assert [(r["task_id"], r["code"], r["split"]) for r in one.rows] == \
           [(r["task_id"], r["code"], r["split"]) for r in two.rows]
    assert [v["reason"] for v in one.verdicts] == [v["reason"] for v in two.verdicts]
    stats = one.stats
    assert stats["accepted"] == 12 and stats["candidates"] == len(one.verdicts)
    assert list(stats["rejected_by_reason"]) == list(REASONS)
    assert sum(stats["rejected_by_reason"].values()) == stats["candidates"] - 12
    assert sum(stats["ops"].values()) == sum(r["num_ops"] for r in one.rows)
    assert stats["signatures_shared_between_splits"] == 0


def test_dataset_files_load_back_as_tasks(tmp_path):
    result = generate_tasks(BuildConfig(n=6, seed=1, jobs=1, heldout_fraction=0.5), progress=False)
    write_outputs(result, tmp_path, "parquet")
    tasks = resolve_tasks(f"gen:{tmp_path}")
    assert sorted(t.task_id for t in tasks) == sorted(r["task_id"] for r in result.rows)
    by_id = {r["task_id"]: r for r in result.rows}
    assert all(t.source == by_id[t.task_id]["code"] and t.meta["flops"] > 0 for t in tasks)
    held = resolve_tasks(f"gen:{tmp_path}:heldout")
    assert {t.meta["split"] for t in held} <= {"heldout"}
    assert len(held) == sum(r["split"] == "heldout" for r in result.rows)
    lines = (tmp_path / "verdicts.jsonl").read_text().splitlines()
    assert len(lines) == result.stats["candidates"]


def test_cli_generate_writes_jsonl_and_stats(tmp_path):
    stats_path = tmp_path / "stats_copy.json"
    rc = main(["tasks", "generate", "--n", "4", "--seed", "2", "--out", str(tmp_path / "gen"), "--format", "jsonl",
               "--jobs", "1", "--no-progress", "--stats", str(stats_path)])
    assert rc == 0
    assert json.loads(stats_path.read_text())["accepted"] == 4
    assert len(resolve_tasks(f"gen:{tmp_path / 'gen'}")) == 4
    assert main(["tasks", "overlap", f"gen:{tmp_path / 'gen'}", "relu,softmax"]) == 0
    assert main(["tasks", "generate", "--n", "0", "--out", str(tmp_path / "x")]) == 2  # a usage error


def test_only_split_keeps_one_split_and_skips_the_others_before_validation():
    from kernelgym.taskgen.splits import HELDOUT, split_of

    config = BuildConfig(n=3, seed=5, jobs=1, only_split=HELDOUT, heldout_fraction=0.1)
    result = generate_tasks(config, progress=False)
    assert len(result.rows) == 3 and {r["split"] for r in result.rows} == {HELDOUT}
    skipped = [v for v in result.verdicts if v["reason"] == "other_split"]
    assert skipped and all(split_of(v["signature"], 0.1) != HELDOUT for v in skipped)
    assert all(v["seconds"] == 0.0 for v in skipped)  # never validated
    assert result.stats["rejected_by_reason"]["other_split"] == len(skipped)
    # every held-out candidate was judged by validation, in index order, as a whole build judges it
    judged = [v for v in result.verdicts if v["reason"] != "other_split"]
    assert [v["index"] for v in result.verdicts] == sorted(v["index"] for v in result.verdicts)
    assert all(split_of(v["signature"], 0.1) == HELDOUT for v in judged)


def test_only_split_rejects_an_unknown_split():
    with pytest.raises(ValueError, match="only_split"):
        BuildConfig(n=1, only_split="test")
