"""Reference timings persist on disk: a restarted worker reuses them, any key change re-measures."""

import pytest
import torch

from kernelgym.judge import JudgeConfig, reference
from kernelgym.judge.reference import Reference, timing_cache_dir
from kernelgym.judge.result import RuntimeStats
from kernelgym.tasks import load_builtin


@pytest.fixture
def timed(monkeypatch, tmp_path):
    """A relu Reference whose measurement is counted instead of run (timing needs a GPU)."""
    monkeypatch.setenv("KERNELGYM_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(reference, "_TIMING_CACHE", {})
    gpu = {"name": "Fake GPU 80GB"}
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: gpu["name"])
    calls = []

    def measure(self, input_sets, config):
        calls.append(config)
        return RuntimeStats.from_samples([1.0, 2.0, 4.0]), RuntimeStats.from_samples([0.5, 1.0]), note[0]

    note = [""]
    monkeypatch.setattr(Reference, "_measure", measure)
    ref = Reference(load_builtin("relu")[0], "small", "cpu", init_seed=1)
    return ref, calls, gpu, note


def restart(monkeypatch):
    monkeypatch.setattr(reference, "_TIMING_CACHE", {})  # what a new worker process starts with


def test_a_restarted_worker_reuses_stored_timings(timed, monkeypatch, tmp_path):
    ref, calls, _, _ = timed
    first = ref.times([], JudgeConfig())
    assert timing_cache_dir() == tmp_path / "reference_times"
    assert len(list(timing_cache_dir().glob("*.json"))) == 1
    restart(monkeypatch)
    again = ref.times([], JudgeConfig())
    assert len(calls) == 1 and again == first and again.eager.median_ms == 2.0


def test_changing_any_key_part_measures_again(timed, monkeypatch):
    ref, calls, gpu, _ = timed
    ref.times([], JudgeConfig())
    restart(monkeypatch)
    ref.times([], JudgeConfig(timing_reps=20))
    gpu["name"] = "Other GPU"
    restart(monkeypatch)
    ref.times([], JudgeConfig())
    assert len(calls) == 3 and len(list(timing_cache_dir().glob("*.json"))) == 3


def test_malformed_entries_are_measured_again_and_replaced(timed, monkeypatch):
    ref, calls, _, _ = timed
    ref.times([], JudgeConfig())
    (path,) = timing_cache_dir().glob("*.json")
    for junk in ("not json", '{"key": [], "eager": null}', path.read_text().replace("2.0", "-2.0")):
        path.write_text(junk)
        restart(monkeypatch)
        assert ref.times([], JudgeConfig()).eager.median_ms == 2.0
    assert len(calls) == 4


def test_a_failed_compile_baseline_is_not_persisted(timed, monkeypatch):
    ref, calls, _, note = timed
    note[0] = "torch.compile baseline failed: OutOfMemoryError"
    assert ref.times([], JudgeConfig()).note == note[0]
    assert list(timing_cache_dir().glob("*.json")) == []
    restart(monkeypatch)
    note[0] = ""
    assert ref.times([], JudgeConfig()).note == "" and len(calls) == 2


def test_judges_missing_the_same_key_together_measure_it_once(timed, monkeypatch):
    import threading
    import time

    ref, calls, _, _ = timed
    measure = Reference._measure

    def slow(self, input_sets, config):  # long enough for every thread to miss the cache
        time.sleep(0.3)
        return measure(self, input_sets, config)

    monkeypatch.setattr(Reference, "_measure", slow)
    results = []
    threads = [threading.Thread(target=lambda: results.append(ref.times([], JudgeConfig()))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(results) == 6 and all(r == results[0] for r in results)
    ref.times([], JudgeConfig(timing_reps=20))  # another key is not held up by the first one's lock
    assert len(calls) == 2
