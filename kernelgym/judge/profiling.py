"""Kernel-level device time of a callable with `torch.profiler` (CUDA activity only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelgym.judge.inputs import clone_values, varied_copy


def profile_kernels(fn: Callable[..., Any], input_sets: list[list[Any]], reps: int) -> list[dict[str, Any]]:
    """Device time per kernel name over `reps` calls: [{name, device_us, calls}], largest first.

    Inputs are cloned before the profiler starts, so copy kernels of the harness never enter the table.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    # Values never seen before (not even in timing), so a value-keyed cache cannot hide the work.
    args = [varied_copy(input_sets[i % len(input_sets)], 1000 + i) for i in range(reps)]
    with torch.no_grad():
        fn(*clone_values(input_sets[0]))  # compile/autotune outside the profile
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for a in args:
                fn(*a)
            torch.cuda.synchronize()
    table: dict[str, dict[str, Any]] = {}
    for evt in prof.events():
        if evt.device_type != DeviceType.CUDA:
            continue
        row = table.setdefault(evt.name, {"name": evt.name, "device_us": 0.0, "calls": 0})
        row["device_us"] += float(evt.time_range.elapsed_us())
        row["calls"] += 1
    return sorted(table.values(), key=lambda r: -r["device_us"])
