"""The replay's scratch poison varies (red-team v4h): a fixed 0xFF poison was an initial value answers
could rely on. `torch.empty` merged into with `tl.atomic_max` is exact when every byte is 0xFF (the
identity of Triton's float atomic_max: a signed max for non-negative values, an unsigned min for
negative ones) and wrong with any other start, as it is outside the judge."""

import importlib.util
import random
import sys

import pytest
import torch

from kernelgym.judge import recorder
from kernelgym.judge.kernel_source import KernelSpec
from kernelgym.judge.replay import Replayer, checked_poison
from kernelgym.judge.replay_judge import trial_poison
from kernelgym.judge.trace import Trace
from kernelgym.judge.trials import Trial
from tests.judge.test_spot_checks import host_timing  # noqa: F401 - a fixture

ATOMIC_MAX = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def tile_max_kernel(x_ptr, out_ptr, R, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    r0 = tl.program_id(0) * BLOCK_R
    rows = r0 + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < R) & (cols[None, :] < N)
    v = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=float("-inf"))
    tl.atomic_max(out_ptr + cols, tl.max(v, axis=0), mask=cols < N)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty((x.shape[1],), dtype=x.dtype, device=x.device)  # relies on the poison
        tile_max_kernel[(triton.cdiv(x.shape[0], 8),)](x, out, x.shape[0], x.shape[1], BLOCK_R=8, BLOCK_N=32)
        return out
"""


@pytest.fixture(autouse=True)
def _installed():
    recorder.install()


def _replayer(tmp_path):
    path = tmp_path / "kg_atomic_max.py"
    path.write_text(ATOMIC_MAX)
    spec = importlib.util.spec_from_file_location("kg_atomic_max", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kg_atomic_max"] = module
    spec.loader.exec_module(module)
    model = module.ModelNew()
    x = torch.randn(40, 32)
    rec = recorder.Recorder([x], recorder.state_storages(model, vars(module)))
    with torch.no_grad(), rec:
        out = model(x)
    trace = Trace.from_wire(rec.finish(out).to_wire())
    specs = {d["name"]: KernelSpec.from_wire(d) for d in rec.kernel_specs()}
    return Replayer(trace, specs, dict(rec.state_bytes), "cpu", allow_torch_compute=False)


def test_an_answer_relying_on_the_poison_is_right_only_under_0xff(tmp_path):
    replay = _replayer(tmp_path)
    x = -torch.rand(40, 32) - 0.5  # every column negative: any other start than -inf shows
    replay.prepare([x])
    assert torch.equal(replay.run(), x.max(dim=0).values)  # the default poison: 0xFF
    for poison in (("random", 12345), ("byte", 0x00), ("byte", 0x7F)):
        replay.prepare([x], poison)
        assert not torch.equal(replay.run(), x.max(dim=0).values), poison


def test_random_poison_is_reproducible_per_seed_and_fills_every_scratch_byte(tmp_path):
    replay = _replayer(tmp_path)
    x = torch.randn(40, 32)
    scratch = [b for b, d in enumerate(replay.trace.buffers) if d["kind"] == "scratch"]
    replay.prepare([x], ("random", 7))
    first = [replay.bufs[b].clone() for b in scratch]
    replay.prepare([x], ("random", 7))
    assert all(torch.equal(a, replay.bufs[b]) for a, b in zip(first, scratch))
    replay.prepare([x], ("random", 8))
    assert not all(torch.equal(a, replay.bufs[b]) for a, b in zip(first, scratch))


def test_the_trials_poison_varies():
    trials = [Trial(i, random.getrandbits(62), "task", False, [], None) for i in range(7)]
    kinds = [checked_poison(trial_poison(t))[0] for t in trials]
    assert kinds[0] == "byte" and "random" in kinds  # trial 0 keeps NaN; others start from random bytes
    assert len({trial_poison(t)[1] for t in trials if trial_poison(t)[0] == "random"}) == kinds.count("random")


@pytest.mark.parametrize("bad", [("byte", 256), ("byte", -1), ("random", -1), ("zero", 0), ("byte", True), "ff"])
def test_malformed_poison_is_refused(bad):
    with pytest.raises(ValueError):
        checked_poison(bad)


def test_timed_calls_are_poisoned_with_varying_bytes(host_timing):  # noqa: F811
    from tests.judge.test_replay_spots import _Replayer, _Session

    seen = []

    class Recording(_Replayer):
        def prepare(self, args, poison=None):
            seen.append(checked_poison(poison))
            super().prepare(args, poison)

    session = _Session(Recording(), [[torch.randn(64)], [torch.randn(64)]])
    session.op_replay_time({"warmup": 2, "reps": 30, "flush_bytes": 64, "spot_seed": 5, "spot_size": 4})
    assert len(seen) >= 30 and all(kind == "byte" for kind, _ in seen)
    assert len({b for _, b in seen}) > 10  # not one fixed byte an answer could take for an initial value
