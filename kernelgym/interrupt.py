"""Ctrl-C in a long command: the first one stops it cleanly, keeping what was judged.

The judge's children run in sessions of their own (`judge.sandbox`), so a terminal's Ctrl-C reaches
only our process; a thread pool would then finish every queued evaluation before `KeyboardInterrupt`
got out (minutes). Children register their kill here (`track`); on Ctrl-C a batch runner calls
`cancel_pool`, which drops the queued work, kills the children in flight and any started while the
pool drains, and waits for the threads, which now end within moments. What finished before Ctrl-C
is the caller's to keep (`Interrupted.done`); what a killed child returned afterwards is not a
verdict and is never recorded (`stopping` tells callbacks so).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import Any

_STOPPING = threading.Event()
_LIVE: dict[int, Callable[[], None]] = {}
_LOCK = threading.Lock()
_TOKENS = itertools.count()


class Interrupted(KeyboardInterrupt):
    """Ctrl-C during a batch; `done` holds the results in the batch's order, None where none finished."""

    def __init__(self, done: list[Any]) -> None:
        super().__init__()
        self.done = done


def track(kill: Callable[[], None]) -> int:
    """Register a live child's `kill`; a token for `untrack`. While a stop is under way the child is
    killed at once (the pool is draining: nothing new may start)."""
    with _LOCK:
        token = next(_TOKENS)
        _LIVE[token] = kill
        stopping = _STOPPING.is_set()
    if stopping:
        kill()
    return token


def untrack(token: int) -> None:
    with _LOCK:
        _LIVE.pop(token, None)


def stopping() -> bool:
    """Whether a stop is under way: a result that arrives now comes from a killed child."""
    return _STOPPING.is_set()


def kill_children() -> None:
    """Kill every tracked child now (each `kill` must be safe to call twice)."""
    with _LOCK:
        kills = list(_LIVE.values())
    for kill in kills:
        kill()


@contextmanager
def stopping_children() -> Iterator[None]:
    """Inside the block every tracked child is killed, also those started inside it; afterwards new
    children may start again (a long-lived process goes on judging)."""
    _STOPPING.set()
    try:
        kill_children()
        yield
    finally:
        _STOPPING.clear()


def cancel_pool(pool: Executor) -> None:
    """After Ctrl-C: drop the queued work, kill the children of what runs, wait for its threads."""
    with stopping_children():
        pool.shutdown(wait=True, cancel_futures=True)
