"""Interleaved programs under Triton's CPU interpreter: a launch's programs run at once, as on a GPU.

`interpreter_semantics` runs a launch's programs one after another in a shuffled order, and approximates with rules
what programs that run at once can see of each other. A launch runs here instead (`enabled`; off with
`KERNELGYM_INTERLEAVE=0`, which gives back the one-after-another order): each resident program is a thread, exactly one of them runs at a time (a baton), and at every global
memory operation (`Schedule.step`: a load, a store, an atomic, a barrier) the baton goes to a resident program drawn
from the launch's seed. A program that read a counter and was then "descheduled" before its next atomic is thus an
execution the interpreter runs, not one a rule has to foresee (red-team s22: a dynamic ticket, then an add whose old
value is taken as the prefix; a lost update between a counter and a plain read-modify-write). The memory rules of
`interpreter_semantics` still apply to what each operation sees; a program's own view of them (`save` / `restore`)
moves with the baton, and an exchange over another program's unordered one always lands (`_LaunchMemory.exchange`
draws its landing only one program after another): atomics of one address act in the order they ran, and a draw
could undo an unlock a spinning program already waited on.

Programs are admitted in the shuffled order while fewer than `RESIDENT` run, as a GPU fills its SMs. A spin-wait
yields at each of its memory operations, so the program it waits for runs; when `HANG_STEPS` memory operations pass
with no program finishing and no memory written, the launch is a hang (`LaunchHang`), which a GPU answers with a
timeout. The draws depend only on the seed: a launch interleaves the same way run to run.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable

import numpy as np

RESIDENT = 64  # programs running at once: threads per launch
HANG_STEPS = 200_000  # memory operations without progress that make a launch a hang
_STACK_BYTES = 4 << 20  # per program thread: interpreted kernels nest shallowly


def enabled() -> bool:
    """Whether launches interleave their programs: the default; `KERNELGYM_INTERLEAVE=0` runs them one after
    another."""
    return os.environ.get("KERNELGYM_INTERLEAVE", "1") != "0"


class LaunchHang(RuntimeError):
    """No program of a launch can progress: a spin-wait on something no other program will do."""


class _Abort(BaseException):
    """Unwinds the thread of a program whose launch stopped (another program raised)."""


class _Resident:
    """One program slot: its thread, the semaphore that hands it the baton, and its program's saved view."""

    __slots__ = ("wake", "state", "thread")

    def __init__(self) -> None:
        self.wake = threading.Semaphore(0)
        self.state: Any = None
        self.thread: threading.Thread | None = None


class Schedule:
    """Runs `count` programs interleaved at their memory operations: `run(i)` runs the i-th program to its end
    (calling `step` before each memory operation, through `current`), `save()` returns the running program's view
    and `restore(view)` reinstates it when that program gets the baton back."""

    def __init__(self, count: int, run: Callable[[int], None], seed: int, save: Callable[[], Any],
                 restore: Callable[[Any], None], resident: int | None = None, hang_steps: int | None = None) -> None:
        self.count, self.run_program, self.save, self.restore = count, run, save, restore
        self.rng = np.random.default_rng(seed)
        self.resident = max(1, min(RESIDENT if resident is None else resident, count))
        self.hang_steps = HANG_STEPS if hang_steps is None else hang_steps
        self.admitted = 0  # programs started so far
        self.active: list[_Resident] = []  # slots holding a program or about to take one
        self.holder: _Resident | None = None  # the slot with the baton
        self.idle = 0  # memory operations since the last progress
        self.steps = 0
        self.error: BaseException | None = None
        self.stopped = False
        self.done = threading.Event()

    def run(self) -> None:
        """Run every program; raise the first error a program raised (the others stop at their next step)."""
        if self.count == 0:
            return
        slots = [_Resident() for _ in range(self.resident)]
        self.active = list(slots)
        old = threading.stack_size()
        threading.stack_size(_STACK_BYTES)
        try:
            for k, slot in enumerate(slots):
                slot.thread = threading.Thread(target=self._work, args=(slot,), name=f"triton-program-{k}",
                                               daemon=True)
                slot.thread.start()
        finally:
            threading.stack_size(old)
        self._hand(self.active[int(self.rng.integers(len(self.active)))])
        self.done.wait()
        for slot in slots:
            slot.thread.join()  # type: ignore[union-attr]
        if self.error is not None:
            raise self.error

    def step(self) -> None:
        """A memory operation of the running program is next: the baton may go to another resident program first."""
        self.steps += 1
        self.idle += 1
        if self.idle > self.hang_steps:
            raise LaunchHang(f"{self.idle} memory operations of the launch's running programs passed with no "
                             "program finishing and nothing written: a spin-wait no program will end (a GPU hangs)")
        if len(self.active) < 2:
            return
        nxt = self.active[int(self.rng.integers(len(self.active)))]
        me = self.holder
        if nxt is me or me is None:
            return
        me.state = self.save()
        self._hand(nxt)
        me.wake.acquire()
        if self.stopped:
            raise _Abort()
        self.restore(me.state)

    def progress(self) -> None:
        """Memory changed (a store, an atomic that wrote): the launch is not hung."""
        self.idle = 0

    def _hand(self, slot: _Resident) -> None:
        self.holder = slot
        slot.wake.release()

    def _work(self, slot: _Resident) -> None:
        slot.wake.acquire()
        if self.stopped:
            return
        try:
            while self.admitted < self.count:
                i, self.admitted = self.admitted, self.admitted + 1
                self.run_program(i)
                self.idle = 0
        except _Abort:
            return
        except BaseException as e:  # noqa: BLE001 - handed to the launching thread, which raises it
            self.error, self.stopped = e, True
            for other in self.active:
                if other is not slot:
                    other.wake.release()
            self.done.set()
            return
        self.active.remove(slot)
        if self.active:
            self._hand(self.active[int(self.rng.integers(len(self.active)))])
        else:
            self.done.set()


_CURRENT: list[Schedule | None] = [None]  # the schedule of the launch running now (launches do not nest)


def current() -> Schedule | None:
    """The interleaving launch running now, if any."""
    return _CURRENT[0]


def run_interleaved(schedule: Schedule) -> None:
    """Run `schedule` as the current one."""
    _CURRENT[0] = schedule
    try:
        schedule.run()
    finally:
        _CURRENT[0] = None
