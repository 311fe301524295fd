"""Kernel-level device time of a callable with `torch.profiler` (CUDA activity only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from kernelgym.judge.inputs import clone_values, varied_copy
from kernelgym.judge.timing import _LAUNCH_SLACK_CYCLES, _gpu_sleep


def _is_harness_spin(name: str) -> bool:
    """torch's `_sleep` kernel (a C++-qualified name: no Triton kernel of an answer can look like it)."""
    return "spin_kernel" in name and "::" in name


def profile_kernels(fn: Callable[..., Any], input_sets: list[list[Any]], reps: int,
                    after_kernels: Callable[[], None] | None = None) -> list[dict[str, Any]]:
    """Device time per kernel name over `reps` calls: [{name, device_us, calls}], largest first.

    Inputs are cloned before the profiler starts, so copy kernels of the harness never enter the table.
    `after_kernels()` runs once the profiled calls have finished on the GPU, before the profiler
    stops and its records are read (host work that needs the GPU to itself no longer).
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
                # The same idle spin as before every timed call (`timing.time_calls`): without it
                # calls ran back to back, each paying for the last one's writes, and an honest
                # answer's profiled time per call came out above its fastest timed call (RH-17).
                _gpu_sleep(_LAUNCH_SLACK_CYCLES)
                fn(*a)
            torch.cuda.synchronize()
            if after_kernels is not None:
                after_kernels()
    table: dict[str, dict[str, Any]] = {}
    for evt in prof.events():
        if evt.device_type != DeviceType.CUDA or _is_harness_spin(evt.name):
            continue
        row = table.setdefault(evt.name, {"name": evt.name, "device_us": 0.0, "calls": 0})
        row["device_us"] += float(evt.time_range.elapsed_us())
        row["calls"] += 1
    return sorted(table.values(), key=lambda r: -r["device_us"])
