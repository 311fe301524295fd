"""Where the busiest judge processes burn host CPU, by native and Python stack (issue 26).

At 16 evaluations in flight on one H200 the GPU's kernels run 24 % of the time and throughput falls below that of
8 in flight, while the candidate processes' main threads use ~3.8 cores (launch/thread_sampler.py, eighteenth
session): something in them spins or waits expensively. This waits AFTER seconds into a benchmark, picks the TOP
kernelgym processes by CPU over two seconds, samples each with py-spy (native frames included) for FOR seconds,
and writes what the samples were doing: the library of the innermost frame (libcuda, libpython, libtorch…), the
innermost frames, the innermost kernelgym Python frame (which judge step the CPU was spent in) and, in candidate
processes, the request (`op_replay_timed_outputs`...).

    python launch/stack_sampler.py OUT.txt --py-spy PATH [--after 25] [--for 15] [--top 4] [--rate 20]

py-spy pauses a process for each native sample: run it in a benchmark run of its own, never one whose rate is
reported as the judge's. launch/judge_throughput_check.sh starts it for the runs named in PROFILE_RUNS."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script from any directory
sys.path.insert(0, str(Path(__file__).resolve().parent))
from kernelgym.judge.proc_cpu import process_cpu_seconds  # noqa: E402
from thread_sampler import kernelgym_pids  # noqa: E402

_LIBRARY = re.compile(r"\(([^():]+\.so[.\d]*)\)$")  # a native frame: "symbol (libcuda.so.1)"
_OURS = re.compile(r"^(\S+) \((?:.*/)?(kernelgym/[\w/]+\.py):\d+\)$")  # a Python frame of ours: "fn (…/kernelgym/x.py:12)"


def parse_raw(text: str) -> list[tuple[list[str], int]]:
    """py-spy's raw (collapsed) format, one stack a line, outermost first: "f1;f2;f3 COUNT"."""
    stacks = []
    for line in text.splitlines():
        frames, _, count = line.rstrip().rpartition(" ")
        if frames and count.isdigit():
            stacks.append((frames.split(";"), int(count)))
    return stacks


def _short(frame: str, width: int = 90) -> str:
    if library(frame) != "python":  # C++ template arguments, innermost first, until none are left (not <module>)
        frame = re.sub(r"<[^<>]*>", "<…>", frame)
        while re.search(r"<[^<>]*<…>[^<>]*>", frame):
            frame = re.sub(r"<[^<>]*<…>[^<>]*>", "<…>", frame)
    return frame if len(frame) <= width else frame[: width - 1] + "…"


def library(frame: str) -> str:
    """The shared object of a native frame; "python" for a Python frame (file:line)."""
    m = _LIBRARY.search(frame)
    return m.group(1) if m else "python"


def ours(frames: list[str]) -> str:
    """The innermost kernelgym Python frame of a stack: which judge step the sample fell in."""
    for frame in reversed(frames):
        m = _OURS.match(frame)
        if m:
            return f"{m.group(1)} ({m.group(2)})"
    return "(no kernelgym frame)"


def request(frames: list[str]) -> str:
    """The candidate process's request a stack is in (`ReplayOps.op_replay_trial`...), else its innermost judge step."""
    for frame in reversed(frames):
        m = _OURS.match(frame)
        if m and re.search(r"\bop_\w+$", m.group(1)):
            return m.group(1)
    return "(no request) " + ours(frames)


def summarise(stacks: list[tuple[list[str], int]], top: int = 12) -> str:
    total = sum(n for _, n in stacks)
    if not total:
        return "no samples (the processes were idle, or py-spy could not read them)\n"
    by_lib, by_leaf, by_ours, by_request = Counter(), Counter(), Counter(), Counter()
    for frames, n in stacks:
        by_lib[library(frames[-1])] += n
        by_leaf[_short(frames[-1])] += n
        by_ours[ours(frames)] += n
        by_request[request(frames)] += n
    out = [f"{total} samples"]
    for title, counter in (("innermost frame's library", by_lib), ("innermost frame", by_leaf),
                           ("innermost kernelgym frame (the judge step)", by_ours),
                           ("candidate request", by_request)):
        out.append(f"  by {title}:")
        out += [f"    {n / total:6.1%}  {name}" for name, n in counter.most_common(top)]
    return "\n".join(out) + "\n"


def busiest(n: int, window: float = 2.0) -> list[tuple[int, float]]:
    """The n kernelgym processes that used the most CPU (cores) over `window` seconds, busiest first."""
    before = {pid: process_cpu_seconds(pid, children=False) for pid in kernelgym_pids()}
    time.sleep(window)
    used = []
    for pid, cpu in before.items():
        now = process_cpu_seconds(pid, children=False)
        if cpu is not None and now is not None:
            used.append((pid, (now - cpu) / window))
    return sorted(used, key=lambda kv: -kv[1])[:n]


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        return " ".join(raw.split())[:100]
    except OSError:
        return "?"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--py-spy", required=True, help="the py-spy executable")
    ap.add_argument("--after", type=float, default=25.0, help="seconds to wait first (the benchmark's warm-up)")
    ap.add_argument("--for", dest="seconds", type=float, default=15.0, help="seconds to sample each process (whole)")
    ap.add_argument("--top", type=int, default=4, help="how many of the busiest processes")
    ap.add_argument("--rate", type=int, default=20, help="samples a second")
    args = ap.parse_args()
    time.sleep(args.after)
    picked = busiest(args.top)
    report = [f"the {len(picked)} busiest kernelgym processes {args.after:g} s in, each sampled {args.seconds:g} s "
              f"at {args.rate}/s (native frames; only samples of threads that were running)"]
    raws = Path(args.out).with_suffix(".raw")  # py-spy's own stacks, kept beside the summary for a closer look
    raws.mkdir(parents=True, exist_ok=True)
    procs = []
    for pid, cores in picked:
        raw = raws / f"{pid}.txt"
        cmd = [args.py_spy, "record", "--native", "-p", str(pid), "-d", str(max(1, round(args.seconds))),
               "-r", str(args.rate), "-f", "raw", "-o", str(raw)]
        procs.append((pid, cores, _cmdline(pid), raw,  # the command line now: the process may be gone at the end
                      subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)))
    every: list[tuple[list[str], int]] = []
    for pid, cores, cmdline, raw, proc in procs:
        try:
            _, err = proc.communicate(timeout=args.seconds + 60)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        stacks = parse_raw(raw.read_text()) if raw.exists() else []
        every += stacks
        report.append(f"\npid {pid} ({cores:.2f} cores when picked): {cmdline}")
        if not stacks:
            report.append(f"  py-spy got nothing (exit {proc.returncode}): {(err or '').strip()[-200:]}")
        else:
            report.append(summarise(stacks, top=6).rstrip())
    report.append("\nall of them together:\n" + summarise(every))
    Path(args.out).write_text("\n".join(report) + "\n")


if __name__ == "__main__":
    main()
