"""Trusted reference work (an audit of one task) in a memory- and time-limited child process.

A reference is trusted code but not a bounded one: one task at the wrong size can take tens of GB
or an hour. Each call gets its own process, forked from a multiprocessing fork server that has
imported torch once (a fork costs milliseconds, not an interpreter start), with an address-space
limit on the CPU (CUDA reserves more address space than any limit would allow, so on a GPU the
device's own out-of-memory error is what bounds it) and a wall-clock deadline, after which it is
killed. Whatever happens, the caller gets an outcome; the run goes on. `each_task` runs such work
over a task set, several children at once, with a progress bar (the audit and the preflight share it).

The judge's candidate sandbox (`kernelgym.judge.sandbox`) is the wrong fit: it speaks the
untrusted child's fixed protocol, while this runs any picklable trusted function.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import multiprocessing.resource_tracker
import resource
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from kernelgym import interrupt
from kernelgym.tasks.task import Task

# Statuses of a call that did not return; the names the judge uses for a candidate's.
TIMEOUT, OOM, CRASHED = "timeout", "oom", "crashed"
_PRELOAD = ["torch", "kernelgym.tasks.audit"]
R = TypeVar("R")


@dataclass(frozen=True)
class ChildLimits:
    """What one task's reference work may use."""

    memory_gb: float = field(default=6.0, metadata={"help": "address-space limit of the child on cpu (0: none)"})
    timeout_s: float = field(default=120.0, metadata={"help": "wall-clock limit of the child, seconds"})

    def __post_init__(self) -> None:
        if self.memory_gb < 0 or self.timeout_s <= 0:
            raise ValueError("ChildLimits needs memory_gb >= 0 and timeout_s > 0")


@dataclass(frozen=True)
class Outcome:
    """`status` is "ok" with the function's return `value`, or timeout/oom/crashed with a `message`."""

    status: str
    value: Any = None
    message: str = ""


def run_limited(fn: Callable[..., Any], args: tuple, limits: ChildLimits, device: str = "cpu") -> Outcome:
    """`fn(*args)` in a fresh child under `limits`; `fn`, `args` and the value must pickle."""
    ctx = _context()
    receive, send = ctx.Pipe(duplex=False)
    memory = int(limits.memory_gb * (1 << 30)) if device == "cpu" else 0
    proc = ctx.Process(target=_child, args=(send, fn, args, memory), daemon=True)
    # The fork server (started by the first call) and its children inherit SIGINT blocked: a terminal's
    # Ctrl-C reaches them too, and it is this process's to handle (it kills them), never a traceback of theirs.
    multiprocessing.resource_tracker.ensure_running()  # first: starting it unblocks SIGINT again
    unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        proc.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, unblocked)
    send.close()
    tracked = interrupt.track(proc.kill)
    try:
        if not receive.poll(limits.timeout_s):
            proc.kill()
            return Outcome(TIMEOUT, message=f"ran past the {limits.timeout_s:g} s limit and was killed")
        try:
            status, value = receive.recv()
        except (EOFError, OSError):
            proc.join()
            return _death(proc.exitcode, limits)
        return Outcome("ok", value) if status == "ok" else Outcome(status, message=value)
    finally:
        interrupt.untrack(tracked)
        receive.close()
        if proc.is_alive():
            proc.kill()
        proc.join()


def each_task(tasks: Sequence[Task], work: Callable[[Task], R], jobs: int = 1, progress: bool = True,
              title: str = "", on_done: Callable[[R], None] | None = None) -> list[R]:
    """`work(task)` for every task, `jobs` at once, the results in the tasks' order; `on_done` sees
    each result as it finishes. A rich progress bar titled `title`, naming the tasks in flight, goes
    to stderr when `progress`. Threads suffice: each only waits on the child its `work` started."""
    if jobs < 1:
        raise ValueError("each_task needs jobs >= 1")
    columns = (TextColumn(f"[bold]{title}[/bold] {{task.description}}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True, disable=not progress) as bar:
        job = bar.add_task("", total=len(tasks))
        running: set[str] = set()
        lock = threading.Lock()

        def one(task: Task) -> R:
            with lock:
                running.add(task.task_id)
                bar.update(job, description=", ".join(sorted(running)))
            result = work(task)
            with lock:
                running.discard(task.task_id)
                if interrupt.stopping():  # Ctrl-C killed its child: an outcome of the kill, not of the task
                    return result
                if on_done is not None:
                    on_done(result)
                bar.update(job, description=", ".join(sorted(running)))
                bar.advance(job)
            return result

        if jobs == 1:  # in this thread: an exception from `work` or `on_done` stops the run here
            return [one(t) for t in tasks]
        pool = ThreadPoolExecutor(max_workers=jobs)
        try:
            return list(pool.map(one, tasks))
        except KeyboardInterrupt:
            interrupt.cancel_pool(pool)  # the queued tasks never start, the children in flight are killed
            raise
        finally:
            pool.shutdown(wait=True)


def _death(exitcode: int | None, limits: ChildLimits) -> Outcome:
    if exitcode == -signal.SIGKILL:  # nobody else kills it: the kernel's OOM killer
        return Outcome(OOM, message="the child was killed, most likely by the kernel for memory")
    how = f"signal {signal.Signals(-exitcode).name}" if exitcode and exitcode < 0 else f"exit code {exitcode}"
    return Outcome(CRASHED, message=f"the child died ({how}) without a result")


def _child(send: multiprocessing.connection.Connection, fn: Callable[..., Any], args: tuple, memory: int) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a fork server started elsewhere may have it unblocked
    if memory:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    try:
        reply = ("ok", fn(*args))
    except MemoryError as e:
        reply = (OOM, f"out of memory: {e}")
    except Exception as e:  # noqa: BLE001 (the caller's function failing is an outcome too)
        status = OOM if is_out_of_memory(str(e)) else CRASHED
        reply = (status, f"{type(e).__name__}: {str(e)[:500]}")
    send.send(reply)
    send.close()


def is_out_of_memory(message: str) -> bool:
    """Whether an error message is torch's (or the allocator's) way of saying memory ran out."""
    text = message.lower()
    return any(s in text for s in ("can't allocate memory", "out of memory", "cannot allocate memory",
                                   "std::bad_alloc"))


_CTX: multiprocessing.context.BaseContext | None = None


def _context() -> multiprocessing.context.BaseContext:
    global _CTX
    if _CTX is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        _CTX = ctx
    return _CTX
