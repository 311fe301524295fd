"""The measurement's held outputs go into buffers allocated before the lock (`pinned_hold`); a
layout the pool was not built for falls back to a fresh copy, never a wrong one."""

from __future__ import annotations

import torch

from kernelgym.judge.child import host_copy, ship_outputs
from kernelgym.judge.pinned_hold import HoldPool, output_meta


def _pool(out, count: int) -> HoldPool:
    pool = HoldPool(host_copy)
    assert pool.allocate(output_meta(ship_outputs(out)), count, "pageable") == count
    return pool


def test_held_outputs_are_copies_in_distinct_buffers():
    outs = [torch.randn(4, 6) for _ in range(3)]
    pool = _pool(outs[0], 3)
    held = [pool.hold(ship_outputs(o)) for o in outs]
    for o, h in zip(outs, held):
        before = o.clone()
        o.add_(1.0)  # a later call changing the device tensor must not reach what was held
        assert torch.equal(h["outputs"][0], before)
        assert h["outputs"][0].data_ptr() != o.data_ptr()
    assert len({h["outputs"][0].data_ptr() for h in held}) == 3
    assert pool.pooled == 3


def test_layout_is_kept_and_tuples_with_scalars_work():
    out = (torch.randn(5, 3).t(), 2.5, torch.arange(6, dtype=torch.int32))
    pool = _pool(out, 1)
    held = pool.hold(ship_outputs(out))
    assert held["outputs"][1] == 2.5 and held["is_sequence"]
    assert held["outputs"][0].stride() == out[0].stride() and torch.equal(held["outputs"][0], out[0])
    assert torch.equal(held["outputs"][2], out[2])
    assert held["layout"][0] == (out[0].stride(), False)


def test_other_layouts_and_an_empty_pool_fall_back_to_fresh_copies():
    pool = _pool(torch.zeros(4, 4), 1)
    other = torch.randn(2, 8)
    held = pool.hold(ship_outputs(other))  # another shape: a fresh copy, the pooled buffer untouched
    assert torch.equal(held["outputs"][0], other) and pool.pooled == 0
    pool.hold(ship_outputs(torch.ones(4, 4)))
    last = torch.full((4, 4), 3.0)
    held = pool.hold(ship_outputs(last))  # pool exhausted
    assert torch.equal(held["outputs"][0], last) and pool.pooled == 1


def test_overlapping_layouts_are_never_pooled():
    expanded = torch.randn(1, 4).expand(3, 4)
    pool = HoldPool(host_copy)
    assert pool.allocate(output_meta(ship_outputs(expanded)), 2, "pageable") == 0
    assert torch.equal(pool.hold(ship_outputs(expanded))["outputs"][0], expanded)
