"""Host CPU seconds of a process and of its threads, read from /proc by whoever watches it (issue 26: where the
judge's host CPU goes). The parent reads a candidate process's numbers from outside, so the answer cannot change
them; `launch/thread_sampler.py` reads every kernelgym process's the same way. Standard library only: None or an
empty reading off Linux, and for a process or thread that is gone."""

from __future__ import annotations

import os


def process_cpu_seconds(pid: int, children: bool = True) -> float | None:
    """User + system CPU seconds of a live process, its threads and (with `children`) the children it reaped
    (a compiler's subprocesses), from /proc: read by the parent, so the answer cannot change it. None off Linux."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = sum(int(v) for v in fields[11:15 if children else 13])  # utime, stime, cutime, cstime
        return ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def thread_cpu_seconds(pid: int) -> dict[int, tuple[str, float]]:
    """Each live thread of a process: its name and user + system CPU seconds, from /proc (empty off Linux)."""
    threads: dict[int, tuple[str, float]] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return threads
    tick = os.sysconf("SC_CLK_TCK")
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                head, tail = f.read().rsplit(b")", 1)
            fields = tail.split()
            threads[int(tid)] = (head.split(b"(", 1)[1].decode(errors="replace")[:24],
                                 (int(fields[11]) + int(fields[12])) / tick)
        except (OSError, ValueError, IndexError):
            continue  # the thread ended in between
    return threads


def other_threads(pid: int, before: dict[int, tuple[str, float]],
                   after: dict[int, tuple[str, float]]) -> list[tuple[str, float]]:
    """CPU seconds the threads other than the main one spent between two `thread_cpu_seconds` readings, by name.
    Why it matters (issue 26): torch's intra-op pool threads carry the interpreter's name ("python3"), CUDA's own
    threads names of their own ("cuda-EvtHandlr"); threads that ended in between are not counted."""
    by_name: dict[str, float] = {}
    for tid, (comm, seconds) in after.items():
        if tid != pid:
            spent = seconds - before.get(tid, (comm, 0.0))[1]
            if spent > 0:
                by_name[comm] = by_name.get(comm, 0.0) + spent
    return sorted(by_name.items())
