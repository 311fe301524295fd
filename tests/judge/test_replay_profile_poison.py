"""The replay's profile poisons each rep's scratch with a byte of its own (red-team v4i). With the fixed
0xFF the profile was the one measurement a kernel could recognise (timed calls draw a byte per call since
v4h) and spin in, lifting its RH-03 share at no cost to the timed runtime. CUDA events are stubbed here:
what is checked is the poison each rep is prepared with."""

import torch

from kernelgym.judge import replay, timing


class _Event:
    def __init__(self, enable_timing=True):
        pass

    def record(self):
        pass

    def elapsed_time(self, other):
        return 0.0


class _Trace:
    entries: list = []

    def preparation_entries(self):
        return set()


class _Replayer:
    def __init__(self):
        self.trace, self.ops, self.poisons = _Trace(), [], []

    def __call__(self, *inputs):
        pass

    def prepare(self, inputs, poison=None):
        self.poisons.append(poison)


def _poisons(monkeypatch, seed, reps=32):
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "Event", _Event)
    monkeypatch.setattr(timing, "_gpu_sleep", lambda cycles: None)
    fake = _Replayer()
    replay.profile_entries(fake, [], reps, seed)
    return fake.poisons


def test_each_profile_rep_gets_its_own_poison_byte_from_the_seed(monkeypatch):
    first = _poisons(monkeypatch, 1234)
    assert len(first) == 32 and all(replay.checked_poison(p) == p and p[0] == "byte" for p in first)
    assert len({p[1] for p in first}) > 8  # not one fixed byte (0xFF was every rep's before)
    assert sum(p[1] == 0xFF for p in first) < 4
    assert _poisons(monkeypatch, 1234) == first  # reproducible per seed
    assert _poisons(monkeypatch, 4321) != first
