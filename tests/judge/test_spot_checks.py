"""The secret spot checks of timed calls (RH-21): which calls are kept, and that what is kept is
the output as it was when its call returned.

Two gaps a read-only review found in the first version (tests/redteam/INDEX.md, RH-21):
(a) kept outputs stayed on the device, where a later call of the answer (the profile's warm-up)
could repair what it skimped on, through pointers it logged; (b) with a time budget only calls
below `timing_reps` could be kept. `time_calls` runs here on the CPU with CUDA's events, sync and
spin replaced by host stand-ins; the logic under test is the host side's.
"""

from collections import Counter

import pytest
import torch

from kernelgym.judge import timing
from kernelgym.judge.child import hold_on_host
from kernelgym.judge.inputs import varied_copy
from kernelgym.judge.spot import SPOT_CHECKS, SpotReservoir, expected_spots, spot_count


def test_the_reservoir_is_a_uniform_sample_over_every_call_however_many_run():
    """Over many secret seeds each of 100 calls is kept about 6 times in 100; late calls as often as
    early ones (the budget gap: calls past `timing_reps` were never candidates)."""
    calls, seeds = 100, 3000
    freq = Counter(c for seed in range(seeds) for c in expected_spots(seed, SPOT_CHECKS, 5, calls))
    mean = seeds * SPOT_CHECKS / calls  # 180
    assert set(freq) == set(range(5, 5 + calls))
    assert all(0.7 * mean < n < 1.3 * mean for n in freq.values()), sorted(freq.values())[:3]
    late = sum(n for c, n in freq.items() if c >= 5 + 50)
    assert 0.4 < late / (seeds * SPOT_CHECKS) < 0.6


def test_the_parent_recomputes_what_the_child_kept():
    for seed in (0, 7, 2**62 + 3):
        online = SpotReservoir(seed, 6)
        for call in range(5, 5 + 1234):
            online.offer(call)
        assert sorted(online.kept) == expected_spots(seed, 6, 5, 1234)
        assert len(set(online.kept)) == 6
    assert expected_spots(1, 6, 5, 4) == [5, 6, 7, 8]  # fewer calls than checks: all of them
    assert expected_spots(1, 0, 5, 100) == []
    assert expected_spots(1, 6, 5, 1000) != expected_spots(2, 6, 5, 1000)


@pytest.mark.parametrize(("out_mib", "expected"), [(0, 6), (1, 6), (256, 6), (512, 3), (768, 1), (1024, 0)])
def test_fewer_spot_calls_for_large_outputs(out_mib, expected):
    """Kept and final outputs travel in one reply: three quarters of the 4 GiB limit at most."""
    assert spot_count(out_mib << 20, 3, 4 << 30) == expected


@pytest.fixture
def host_timing(monkeypatch):
    """`time_calls` without a GPU: events that time nothing, no-op sync and spin, host flush buffer."""

    class Event:
        def __init__(self, enable_timing=False):
            pass

        def record(self):
            pass

        def elapsed_time(self, other):
            return 1.0

    real_empty = torch.empty
    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(timing, "_gpu_sleep", lambda cycles: None)
    monkeypatch.setattr(timing.torch, "empty", lambda *a, device=None, **k: real_empty(*a, **k))


class _Repairer:
    """Skimps on every call (zeros), then in each later call repairs every output it returned
    before: what an answer that logs output addresses can do on the device through forged
    pointers, here through the Python references it keeps."""

    def __init__(self):
        self.returned: list[tuple[torch.Tensor, torch.Tensor]] = []

    def __call__(self, x):
        for out, x_then in self.returned:
            out.copy_(torch.relu(x_then))
        out = torch.zeros_like(x)
        self.returned.append((out, x.clone()))
        return out


def test_kept_outputs_are_copies_taken_when_their_call_returned(host_timing):
    sets = [[torch.randn(64)], [torch.randn(64)]]
    model = _Repairer()
    kept: dict = {}
    _, _, finals = timing.time_calls(model, sets, warmup=2, reps=20, flush_bytes=64, hold=hold_on_host,
                                     spots=SpotReservoir(5, 6), kept=kept)
    model(sets[0][0])  # one more call (the profile's warm-up): every output returned so far is now right
    assert sorted(kept) == expected_spots(5, 6, 2, 20 - 2)
    for call, held in kept.items():
        assert held["outputs"][0].abs().sum() == 0, f"call {call}: repaired after it returned"
        assert held["layout"] == [((1,), True)]
    assert all(f["outputs"][0].abs().sum() == 0 for f in finals)
    # What the old code kept, the live output objects, is repaired by the later call:
    assert all(torch.equal(out, torch.relu(x)) for out, x in model.returned[:-1])


def test_with_a_time_budget_calls_past_the_minimum_are_kept_too(host_timing):
    """The budget (huge here) is cut by `max_reps`: 400 timed calls, 398 varied, the sample over all."""
    sets = [[torch.randn(16)], [torch.randn(16)]]
    kept: dict = {}
    times, _, _ = timing.time_calls(torch.relu, sets, warmup=3, reps=10, flush_bytes=64, budget_s=1e9,
                                    max_reps=400, hold=hold_on_host, spots=SpotReservoir(11, 6), kept=kept)
    assert len(times) == 400
    assert sorted(kept) == expected_spots(11, 6, 3, 398)
    assert max(kept) >= 3 + 10  # beyond the minimum: never a candidate before
    for call, held in kept.items():  # each kept output is that call's, on its varied inputs
        assert torch.equal(held["outputs"][0], torch.relu(varied_copy(sets[call % 2], call)[0]))


def test_the_childs_timing_reply_carries_outputs_as_they_were_returned(host_timing, monkeypatch):
    """The child's own path: `op_time` with the parent's seed, a later call of the answer, then
    `op_timed_outputs`: the kept calls are the ones the parent recomputes, their outputs unrepaired."""
    from kernelgym.judge import child as child_mod

    child_mod.bind_trusted()
    session = child_mod._Session()
    monkeypatch.setattr(session, "_integrity", lambda: {})
    monkeypatch.setattr(session, "_hooked", lambda: "")
    monkeypatch.setitem(child_mod._TRUSTED, "take", lambda: {})
    session.model = _Repairer()
    session.timing_sets = [[torch.randn(32)], [torch.randn(32)], [torch.randn(32)]]
    reply = session.op_time({"warmup": 5, "reps": 50, "flush_bytes": 64, "spot_seed": 99, "spot_size": 6})
    assert len(reply["times_ms"]) == 50, reply
    session.model(session.timing_sets[0][0])  # the profile's warm-up call
    out = session.op_timed_outputs({})
    assert [c for c, _, _ in out["spots"]] == expected_spots(99, 6, 5, 50 - 3)
    assert all(o[0].abs().sum() == 0 for _, o, _ in out["spots"])
    assert len(out["outputs"]) == 3 and all(o[0].abs().sum() == 0 for o in out["outputs"])
