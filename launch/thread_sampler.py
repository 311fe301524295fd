"""Where the judge's host CPU goes, by thread (issue 26): every PERIOD seconds, each thread of every process whose
command line names kernelgym (the service's worker, the fork server, the candidate processes forked from it) is read
from /proc; at the end (SIGTERM, SIGINT or SECONDS elapsed) the CPU-seconds spent in between are printed by thread
name, main threads apart from the others (CUDA's own threads, torch's pool, the driver's event handler...).

    python launch/thread_sampler.py OUT.txt [SECONDS] [PERIOD]

Run beside a benchmark (launch/judge_throughput_check.sh starts one per run); reads /proc as the judge does
(`kernelgym.judge.proc_cpu`)."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from any directory
from kernelgym.judge.proc_cpu import thread_cpu_seconds  # noqa: E402


def kernelgym_pids() -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if b"kernelgym" in f.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


def sample() -> dict[tuple[int, int], tuple[str, float]]:
    """(pid, tid) -> (thread name, CPU-seconds so far) for every thread of our processes."""
    return {(pid, tid): reading for pid in kernelgym_pids() for tid, reading in thread_cpu_seconds(pid).items()}


def main() -> None:
    path = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 3600.0
    period = float(sys.argv[3]) if len(sys.argv) > 3 else 2.0
    stop = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.append(1))
    spent: dict[tuple[str, str], float] = defaultdict(float)
    threads: dict[tuple[str, str], set] = defaultdict(set)
    start = time.monotonic()
    last = sample()
    print("sampling", flush=True)  # for whoever starts the work to be measured only now
    while not stop and time.monotonic() - start < seconds:
        time.sleep(period)
        now = sample()
        for (pid, tid), (name, cpu) in now.items():
            key = ("main" if pid == tid else "thread", name)
            spent[key] += max(0.0, cpu - last.get((pid, tid), (name, 0.0))[1])  # a new thread: all of its CPU
            threads[key].add((pid, tid))
        last = now
    wall = time.monotonic() - start
    total = sum(spent.values())
    with open(path, "w") as f:
        f.write(f"{wall:.0f} s sampled every {period:g} s: {total:.1f} CPU-s in kernelgym processes "
                f"({total / wall if wall else 0:.1f} cores)\n")
        f.write(f"{'kind':6} {'thread name':24} {'CPU-s':>8} {'cores':>6} {'threads':>7}\n")
        for (kind, name), cpu in sorted(spent.items(), key=lambda kv: -kv[1])[:25]:
            f.write(f"{kind:6} {name[:24]:24} {cpu:8.1f} {cpu / wall if wall else 0:6.2f} {len(threads[(kind, name)]):7}\n")


if __name__ == "__main__":
    main()
