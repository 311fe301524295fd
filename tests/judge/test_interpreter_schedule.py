"""A launch's programs run interleaved at their memory operations (`kernelgym.judge.interpreter_schedule`).

The scheduler itself on plain Python programs, then real kernels under `TRITON_INTERPRET=1` with the mode on.
"""

import pytest
import torch
import triton
import triton.language as tl

from kernelgym.judge import interpreter_schedule
from kernelgym.judge.interpreter import interpreting, make_interpreter_faithful
from kernelgym.judge.interpreter_schedule import Schedule, run_interleaved


def _trace(seed: int, programs: int = 6, ops: int = 4, resident: int = 64) -> list[tuple[int, int]]:
    """(program, operation) in the order a schedule of `seed` ran them."""
    done: list[tuple[int, int]] = []

    def run(i: int) -> None:
        for k in range(ops):
            interpreter_schedule.current().step()  # type: ignore[union-attr]
            done.append((i, k))

    run_interleaved(Schedule(programs, run, seed, save=lambda: None, restore=lambda view: None,
                             resident=resident))
    return done


def test_programs_interleave_deterministically_per_seed():
    trace = _trace(seed=3)
    assert sorted(trace) == [(i, k) for i in range(6) for k in range(4)]  # every operation once
    assert trace == _trace(seed=3)
    assert trace != sorted(trace, key=lambda done: done[0])  # not one program after another
    assert len({tuple(_trace(seed=s)) for s in range(4)}) > 1


def test_each_program_resumes_with_its_own_view():
    views: dict[int, list[int]] = {}
    running = [-1]

    def run(i: int) -> None:
        running[0] = i
        for _ in range(3):
            interpreter_schedule.current().step()  # type: ignore[union-attr]
            views.setdefault(i, []).append(running[0])

    run_interleaved(Schedule(5, run, 1, save=lambda: running[0], restore=lambda view: running.__setitem__(0, view)))
    assert views == {i: [i, i, i] for i in range(5)}


def test_at_most_resident_programs_run_at_once():
    trace = _trace(seed=0, programs=8, ops=3, resident=2)
    started: list[int] = []
    for i, k in trace:
        if k == 0:
            started.append(i)
        finished = {j for j, kk in trace[:trace.index((i, k)) + 1] if kk == 2}
        assert len(set(started) - finished) <= 2


def test_an_error_in_one_program_stops_the_launch():
    def run(i: int) -> None:
        for k in range(3):
            interpreter_schedule.current().step()  # type: ignore[union-attr]
            if i == 2 and k == 1:
                raise ValueError("program 2 failed")

    with pytest.raises(ValueError, match="program 2 failed"):
        run_interleaved(Schedule(5, run, 0, save=lambda: None, restore=lambda view: None))
    assert interpreter_schedule.current() is None


def test_a_spin_nobody_ends_is_a_hang_not_a_loop_forever():
    def run(i: int) -> None:
        while True:
            interpreter_schedule.current().step()  # type: ignore[union-attr]

    with pytest.raises(interpreter_schedule.LaunchHang):
        run_interleaved(Schedule(3, run, 0, save=lambda: None, restore=lambda view: None, hang_steps=500))


# -- real kernels --------------------------------------------------------------------------------
needs_interpreter = pytest.mark.skipif(not interpreting(), reason="runs Triton's CPU interpreter")


@pytest.fixture
def interleaved(monkeypatch):
    make_interpreter_faithful()
    monkeypatch.setenv("KERNELGYM_INTERLEAVE", "1")


@triton.jit
def two_tickets(counter_ptr, out_ptr):
    # one after another, each program takes two consecutive tickets: the first always even
    first = tl.atomic_add(counter_ptr, 1)
    second = tl.atomic_add(counter_ptr, 1)
    tl.store(out_ptr + tl.program_id(0), first * 1000 + second)


@needs_interpreter
def test_a_program_may_be_descheduled_between_two_atomics(interleaved):
    counter, out = torch.zeros(1, dtype=torch.int32), torch.zeros(16, dtype=torch.int32)
    two_tickets[(16,)](counter, out)
    first, second = (out // 1000).tolist(), (out % 1000).tolist()
    assert sorted(first + second) == list(range(32))  # atomics stay atomic
    assert any(f % 2 for f in first)  # another program's ticket came between a program's two


@triton.jit
def locked_sum(x_ptr, out_ptr, lock_ptr, BLOCK: tl.constexpr):
    part = tl.sum(tl.load(x_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)), axis=0)
    while tl.atomic_xchg(lock_ptr, 1) == 1:
        pass
    tl.store(out_ptr, tl.load(out_ptr) + part)
    tl.atomic_xchg(lock_ptr, 0)


@needs_interpreter
def test_a_spin_lock_ends_and_still_merges_exactly(interleaved):
    x, out, lock = torch.ones(16 * 8), torch.zeros(1), torch.zeros(1, dtype=torch.int32)
    locked_sum[(16,)](x, out, lock, BLOCK=8)
    assert out.item() == 128.0 and lock.item() == 0


@triton.jit
def wait_forever(flag_ptr, out_ptr):
    while tl.atomic_add(flag_ptr, 0) == 0:  # nobody sets it
        pass
    tl.store(out_ptr + tl.program_id(0), 1)


@needs_interpreter
def test_a_deadlock_is_an_error_not_a_hang(interleaved, monkeypatch):
    monkeypatch.setattr(interpreter_schedule, "HANG_STEPS", 300)
    flag, out = torch.zeros(1, dtype=torch.int32), torch.zeros(4, dtype=torch.int32)
    with pytest.raises(Exception, match="spin-wait no program will end"):
        wait_forever[(4,)](flag, out)
