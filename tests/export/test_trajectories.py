"""Trajectory export: episodes and store rows become rows that round-trip, filters pick the right turns."""

import json

import pytest

from kernelgym.cli import main
from kernelgym.env import EnvConfig, KernelEnv
from kernelgym.export.selection import SFTFilter, best_of_n_rows, sft_rows
from kernelgym.export.tables import features_of, read_table, write_table
from kernelgym.export.trajectories import (
    TRAJECTORY_COLUMNS,
    EpisodeRecorder,
    Trajectory,
    append_log,
    from_log,
    from_store,
)
from kernelgym.judge.result import CheatVerdict, EvalResult, Profile, Status
from kernelgym.service.store import NewRequest, Store
from kernelgym.tasks import load_builtin


def _result(status: Status = Status.OK, speedup: float | None = 1.5, share: float | None = 0.9, **kw) -> EvalResult:
    ok = status is Status.OK
    profile = Profile(kernels=[], total_device_us=10.0, triton_share=share) if share is not None else None
    return EvalResult(status=status, task_id="relu", compiled=ok, correct=ok, speedup_eager=speedup if ok else None,
                      profile=profile if ok else None, **kw)


def _episode(trajectory_id: str, results: list[EvalResult], group: str = "") -> Trajectory:
    """A real KernelEnv episode on `relu` whose judge returns `results` in turn."""
    queue = list(results)
    env = KernelEnv(env_config=EnvConfig(max_turns=len(results)), judge_fn=lambda task, answer, cfg: queue.pop(0))
    recorder = EpisodeRecorder(trajectory_id, "relu", group_id=group, meta={"step": 3})
    recorder.on_reset(env.reset("relu"))
    for k in range(len(results)):
        answer = f"```python\n# attempt {k}\n```"
        recorder.on_step(answer, env.step(answer))
    return recorder.trajectory()


@pytest.fixture
def episodes() -> list[Trajectory]:
    return [
        _episode("e0", [_result(Status.WRONG_OUTPUT), _result(speedup=1.5)], group="g"),
        _episode("e1", [_result(speedup=0.8), _result(speedup=2.5)], group="g"),
        _episode("e2", [_result(Status.CHEAT, cheats=[CheatVerdict("RH-01", "torch op")])], group="g"),
        _episode("e3", [_result(speedup=None, share=None)], group="h"),  # CPU: nothing measured
    ]


def test_recorded_episode_is_the_conversation_the_policy_saw(episodes):
    t = episodes[0]
    assert [m["role"] for m in t.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert t.turns[0].result["status"] == "wrong_output" and t.turns[0].reward == 0.0
    assert t.returns_to_go() == pytest.approx([t.turns[1].reward, t.turns[1].reward])
    assert t.prompt_before(1) == t.messages[:4] and t.answer(1).startswith("```python\n# attempt 1")


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_trajectories_round_trip_through_the_dataset_file(tmp_path, episodes, fmt):
    rows = [t.to_row() for t in episodes]
    path = write_table(rows, tmp_path / "trajectories", fmt, lambda: features_of(TRAJECTORY_COLUMNS))
    back = read_table(path)
    assert [Trajectory.from_row(r) for r in back] == episodes
    assert back[1]["turns"][1]["speedup"] == 2.5 and back[3]["turns"][0]["triton_share"] is None
    assert from_log(path) == episodes


def test_episode_log_appends_and_reads_back(tmp_path, episodes):
    log = tmp_path / "episodes.jsonl"
    assert append_log(log, episodes[:2]) == 2 and append_log(log, episodes[2:]) == 2
    assert from_log(log) == episodes


def test_sft_filter_takes_the_best_qualifying_turn(episodes):
    rows = sft_rows(episodes, SFTFilter(min_triton_share=0.5, min_speedup=1.0))
    assert [(r["trajectory_id"], r["turn"]) for r in rows] == [("e0", 1), ("e1", 1)]  # no cheat, no unmeasured
    first = rows[0]
    assert [m["role"] for m in first["prompt"]] == ["system", "user", "assistant", "user"]
    assert first["completion"] == [{"role": "assistant", "content": episodes[0].answer(1)}]
    assert [r["trajectory_id"] for r in sft_rows(episodes, SFTFilter())] == ["e0", "e1", "e3"]
    assert sft_rows(episodes, SFTFilter(min_speedup=3.0)) == []


def test_best_of_n_keeps_the_top_trajectories_per_group(episodes):
    # e1's second answer (2.2) is the group's best, though as a turn it earned only its gain over 1.35
    e0, e1 = episodes[0].turns[1], episodes[1].turns[1]
    assert e1.answer_reward == pytest.approx(2.2) and e1.reward == pytest.approx(2.2 - 1.35)
    assert e1.reward < e0.reward
    assert episodes[1].to_row()["best_reward"] == pytest.approx(2.2) and episodes[1].to_row()["best_turn"] == 1
    rows = best_of_n_rows(episodes, n=1, sft_filter=SFTFilter())
    assert [(r["group_id"], r["trajectory_id"], r["turn"]) for r in rows] == [("g", "e1", 1), ("h", "e3", 0)]
    assert rows[0]["reward"] == pytest.approx(2.2)
    two = best_of_n_rows(episodes, n=2, min_reward=1.0, sft_filter=SFTFilter())
    assert [r["trajectory_id"] for r in two] == ["e1", "e0"]  # e3's 0.5 is under min_reward


def _store(tmp_path) -> str:
    store = Store(tmp_path / "s.db")
    reqs = [NewRequest(id=f"r{i}", batch_id="b", seq=i, key=f"k{i}", task_id="relu", answer=f"answer {i}", config={})
            for i in range(4)]
    reqs.append(NewRequest(id="r4", batch_id="b", seq=4, key="k4", task_id="mine", answer="a",
                           config={}, task_source=load_builtin("sigmoid")[0].source))
    store.insert(reqs, cached={})
    store.finish("r0", _result(speedup=2.0).to_dict())
    store.finish("r1", _result(Status.WRONG_OUTPUT).to_dict())
    store.finish("r2", _result(Status.SYSTEM_ERROR).to_dict())
    store.finish("r4", _result().to_dict())  # r3 stays pending: not exported
    store.close()
    return str(tmp_path / "s.db")


def test_store_requests_become_one_turn_trajectories(tmp_path):
    db = _store(tmp_path)
    found, skipped = from_store(db)  # no task spec: only the inline source is known
    assert [t.trajectory_id for t in found] == ["r4"] and skipped == {"system_error": 1, "unknown task": 2}
    found, skipped = from_store(db, tasks={t.task_id: t for t in load_builtin("relu")})
    assert [t.trajectory_id for t in found] == ["r0", "r1", "r4"]
    r0 = found[0]
    assert "def get_inputs" in r0.messages[1]["content"] and r0.messages[-1] == {"role": "assistant",
                                                                                "content": "answer 0"}
    assert r0.turns[0].reward == pytest.approx(0.5 + 0.5 * 2.0 + 0.5 * 0.9)  # Dr. Kernel's reward
    assert found[1].turns[0].reward == 0.0


def test_cli_export_writes_the_three_datasets(tmp_path, episodes):
    log = tmp_path / "episodes.jsonl"
    append_log(log, episodes)
    out = tmp_path / "out"
    rc = main(["data", "export", "--store", _store(tmp_path), "--logs", str(log), "--tasks", "relu", "--out",
               str(out), "--min-speedup", "1.0", "--best-of", "1"])
    assert rc == 0
    stats = json.loads((out / "export_stats.json").read_text())
    assert stats["trajectories"] == 7 and stats["skipped"] == {"system_error": 1}
    sft = read_table(out / "sft.parquet")
    assert {r["trajectory_id"] for r in sft} == {"r0", "r4", "e0", "e1"}
    assert isinstance(sft[0]["prompt"], list) and sft[0]["completion"][0]["role"] == "assistant"
    assert len(read_table(out / "trajectories.parquet")) == 7 and read_table(out / "best_of_n.parquet")
    assert main(["data", "export", "--out", str(out)]) == 2  # no source: a usage error
