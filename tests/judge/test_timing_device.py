"""Timing runs on the GPU the work runs on, from whatever thread times it.

CUDA's current device is per host thread and a new thread starts on GPU 0. A service worker judging on
cuda:3 ran the reference's timing in a job thread: its events were recorded on GPU 0's idle stream while
the reference's kernels ran on cuda:3, so every reference "took" ~2.9 us and no answer could be faster
(the thirteenth session's RL, judged on GPUs 2 and 3: fast_1 0 at nine steps of ten). Here on the CPU the
device switch is recorded by a stand-in of `torch.cuda.device`; tests/gpu/test_timing_device_gpu.py
measures the real thing on a second GPU.
"""

import contextlib
import threading

import pytest
import torch

from kernelgym.judge import JudgeConfig, reference, timing
from kernelgym.judge.reference import Reference
from kernelgym.tasks import load_builtin


@pytest.fixture
def fake_cuda(monkeypatch):
    """A host stand-in for CUDA with a per-thread current device, as the CUDA runtime has."""
    state = threading.local()
    seen: list[tuple[str, str]] = []  # (what, the thread's current device when it happened)

    def current() -> str:
        return getattr(state, "device", "cuda:0")

    @contextlib.contextmanager
    def device(d):
        before = current()
        state.device = str(torch.device(d))
        try:
            yield
        finally:
            state.device = before

    class Event:
        def __init__(self, enable_timing=False):
            seen.append(("event", current()))

        def record(self):
            seen.append(("record", current()))

        def elapsed_time(self, other):
            return 1.0

    real_empty = torch.empty
    monkeypatch.setattr(torch.cuda, "device", device)
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: seen.append(("sync", current())))
    monkeypatch.setattr(timing, "_gpu_sleep", lambda cycles: seen.append(("spin", current())))
    monkeypatch.setattr(timing.torch, "empty", lambda *a, device=None, **k: real_empty(*a, **k))
    return seen, current


def test_events_flush_and_syncs_follow_the_device_of_the_work(fake_cuda):
    seen, current = fake_cuda
    calls = []

    def work(x):
        calls.append(current())
        return x + 1

    def in_a_new_thread():  # a job thread of a worker: it starts on GPU 0
        timing.time_calls(work, [[torch.ones(4)]], warmup=1, reps=3, flush_bytes=64, device="cuda:3")

    t = threading.Thread(target=in_a_new_thread)
    t.start()
    t.join()
    assert calls and set(calls) == {"cuda:3"}
    kinds = {what for what, _ in seen}
    assert {"event", "record", "sync", "spin"} <= kinds
    assert {dev for _, dev in seen} == {"cuda:3"}, seen


def test_without_a_device_the_threads_current_one_is_used(fake_cuda):
    seen, current = fake_cuda
    timing.time_calls(lambda x: x, [[torch.ones(2)]], warmup=0, reps=2, flush_bytes=64)
    assert {dev for _, dev in seen} == {"cuda:0"}


def test_the_reference_is_timed_on_its_own_device(monkeypatch):
    got = []

    def time_calls(fn, sets, *args, device=None, **kwargs):
        got.append(device)
        return [1.0, 1.0], [1.0, 1.0], []

    monkeypatch.setattr(reference, "time_calls", time_calls)
    monkeypatch.setattr(reference, "timing_lock", lambda device: contextlib.nullcontext())
    monkeypatch.setattr(reference, "to_device", lambda values, device: values)
    ref = Reference(load_builtin("relu")[0], "small", "cpu", init_seed=1)
    inputs = ref.inputs(1, "task")
    ref.device = "cuda:2"  # where its model would live on a 4-GPU host; nothing here runs on it
    eager, compiled, note = ref._measure([inputs], JudgeConfig(time_compile_baseline=False))
    assert got == ["cuda:2"] and eager.median_ms == 1.0 and compiled is None
