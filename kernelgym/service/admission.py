"""What the service accepts: `EvalRequest`, its validation, and the content key that names a verdict.

Everything a request can get wrong is found here, at submit time, and reported as a
`RequestRejected` that says which request and which field: a request that is accepted has a task
the workers can resolve and a config `JudgeConfig` accepts, so a bad request never costs a GPU slot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.versions import software_versions
from kernelgym.tasks.task import Task, TaskError

# Why a request was refused; the HTTP layer maps each to a status code.
EMPTY, TOO_MANY, TOO_LARGE, UNKNOWN_TASK, BAD_CONFIG, INVALID = (
    "empty_batch", "batch_too_large", "answer_too_large", "unknown_task", "bad_config", "invalid_request")


@dataclass(frozen=True)
class EvalRequest:
    """One (task, answer) to judge. `task_source`, when given, is the task's KernelBench-style
    source and `task_id` only names it; otherwise `task_id` must resolve to exactly one task
    (`kernelgym.tasks.loaders.resolve_tasks`). `config` holds `JudgeConfig` field overrides."""

    task_id: str
    answer: str
    config: dict[str, Any] = field(default_factory=dict)
    task_source: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalRequest":
        return cls(task_id=d["task_id"], answer=d["answer"], config=dict(d.get("config") or {}),
                   task_source=d.get("task_source"))


@dataclass(frozen=True)
class Submission:
    """What a submit accepted: one batch id and the request ids, in the order submitted."""

    batch_id: str
    ids: list[str]
    cache_hits: int = 0


class RequestRejected(ValueError):
    """A request the service will not accept; `reason` is one of this module's constants and
    `index` the position of the offending request in its batch (None: the batch as a whole)."""

    def __init__(self, reason: str, message: str, index: int | None = None) -> None:
        super().__init__(message if index is None else f"requests[{index}]: {message}")
        self.reason = reason
        self.index = index


@dataclass(frozen=True)
class Limits:
    """Request limits, enforced at submit."""

    max_batch: int = 4096
    max_answer_bytes: int = 1_000_000
    max_task_source_bytes: int = 1_000_000


class TaskCatalog:
    """Resolves task ids to their source, once per id (resolving may read files or a dataset).

    Only successes are remembered, so a task added to disk later becomes usable without a restart."""

    def __init__(self, resolver: Callable[[str], list[Task]] | None = None, max_entries: int = 10_000,
                 allow_specs: bool = False) -> None:
        """By default only plain task ids (built-in names) resolve: a spec such as a file path,
        `kernelbench:` or `hf:` would let a client make the server read its own disk. A task's
        reference code runs unsandboxed in the worker, so inline `task_source` is for trusted
        (token-holding) clients only."""
        if resolver is None:
            from kernelgym.tasks.loaders import resolve_tasks as resolver
        self._resolver = resolver if allow_specs else _plain_ids_only(resolver)
        self._max_entries = max_entries
        self._sources: dict[str, str] = {}
        self._lock = threading.Lock()

    def source(self, task_id: str) -> str:
        """The source of the one task `task_id` names; `TaskError` if it names none or several."""
        with self._lock:
            cached = self._sources.get(task_id)
        if cached is not None:
            return cached
        tasks = self._resolver(task_id)
        if len(tasks) != 1:
            raise TaskError(f"task {task_id!r} names {len(tasks)} tasks, not one")
        with self._lock:
            if len(self._sources) < self._max_entries:
                self._sources[task_id] = tasks[0].source
        return tasks[0].source


def _plain_ids_only(resolver: Callable[[str], list[Task]]) -> Callable[[str], list[Task]]:
    def resolve(task_id: str) -> list[Task]:
        if not re.fullmatch(r"[A-Za-z0-9_]+", task_id):
            raise TaskError(f"task {task_id!r}: the service takes task ids, not task specs (files, kernelbench:, "
                            "hf:); send the task's source as task_source instead")
        return resolver(task_id)

    return resolve


# The most a client may ask of one evaluation: each of these buys the request more exclusive worker
# or GPU time (or memory) than the service's defaults, and a client is not the operator.
CLIENT_LIMITS: dict[str, float] = {
    "num_trials": 20, "timeout_s": 900.0, "timing_warmup": 50, "timing_reps": 1000, "timing_budget_s": 10.0,
    "timing_input_sets": 10, "cpu_memory_gb": 64.0, "max_answer_bytes": 1_000_000, "max_log_bytes": 10_000_000,
    "max_message_bytes": 4 << 30, "l2_flush_bytes": 1 << 30}


def normalised_config(config: dict[str, Any]) -> dict[str, Any]:
    """The full `JudgeConfig` a request's overrides produce, as JSON-able data, so that `{}` and
    the defaults spelled out share a content key. Raises `ValueError` for a field `JudgeConfig`
    refuses or a value over `CLIENT_LIMITS`. `device` is refused: the worker that runs the job sets it."""
    if not isinstance(config, dict):
        raise ValueError(f"must be an object of JudgeConfig fields, not {type(config).__name__}")
    if "device" in config:
        raise ValueError("device is chosen by the service's workers (kernelgym serve --devices), not by a request")
    hints = {f.name: str(f.type) for f in dataclasses.fields(JudgeConfig)}
    for name, value in config.items():
        if name in hints and not _has_type(value, hints[name]):
            raise ValueError(f"{name} must be {hints[name]}, not {value!r}")
        if not _finite(value):  # JSON parsers take NaN and Infinity; no limit or sign check catches NaN
            raise ValueError(f"{name} must hold finite numbers, not {value!r}")
        if name in CLIENT_LIMITS and value > CLIENT_LIMITS[name]:
            raise ValueError(f"{name} is {value!r}; a client may ask for at most {CLIENT_LIMITS[name]:g}")
    full = dataclasses.asdict(JudgeConfig.from_dict(config))
    full.pop("device")
    return json.loads(json.dumps(full, sort_keys=True))


def _has_type(value: Any, annotation: str) -> bool:
    """Whether a JSON value fits a `JudgeConfig` annotation such as `int`, `bool | None` or
    `tuple[str, ...]` (JudgeConfig itself does not check types; a wrong one would only fail on a worker)."""
    kinds: list[type] = []
    for part in (p.strip() for p in annotation.split("|")):
        base = part.split("[", 1)[0]
        kinds += {"None": [type(None)], "int": [int], "float": [int, float], "bool": [bool], "str": [str],
                  "tuple": [list, tuple], "list": [list, tuple], "dict": [dict]}.get(base, [object])
    if isinstance(value, bool) and bool not in kinds:
        return False  # JSON true is not a number of trials
    return isinstance(value, tuple(kinds))


def _finite(value: Any) -> bool:
    """Whether every number in a JSON value (nested lists and objects included) is finite."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return True


def content_key(task_id: str, task_source: str, answer: str, config: dict[str, Any],
                environment: dict[str, Any]) -> str:
    """sha256 of everything that decides a verdict: task, answer, judge config, and the
    environment (GPU model, software versions). Same key: the stored result may be reused."""
    blob = json.dumps({"task_id": task_id, "task_source": task_source, "answer": answer, "config": config,
                       "environment": environment}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def environment_of(stats: dict[str, Any], gpu_model: str | None = None) -> dict[str, Any]:
    """The part of the content key that names where verdicts come from: the backend's stats
    (`gpu_model`, `versions`), else `gpu_model` as given and this process's software versions."""
    return {"gpu_model": str(stats.get("gpu_model") or gpu_model or ""),
            "versions": stats.get("versions") or software_versions()}


@dataclass(frozen=True)
class Admitted:
    """A validated request with its content key; `source` is the task source the key hashes."""

    request: EvalRequest
    key: str


def admit(requests: list[EvalRequest], catalog: TaskCatalog, limits: Limits,
          environment: dict[str, Any]) -> list[Admitted]:
    """Validate a batch and compute each request's content key, or raise `RequestRejected` for
    the first request that is wrong (nothing of the batch is accepted then)."""
    if not requests:
        raise RequestRejected(EMPTY, "the batch is empty: send at least one request")
    if len(requests) > limits.max_batch:
        raise RequestRejected(TOO_MANY, f"the batch has {len(requests)} requests; at most {limits.max_batch} per batch")
    out = []
    for i, r in enumerate(requests):
        if not isinstance(r.task_id, str) or not r.task_id.strip() or len(r.task_id) > 1024:
            raise RequestRejected(INVALID, "task_id must be a non-empty string of at most 1024 characters", i)
        if not isinstance(r.answer, str):
            raise RequestRejected(INVALID, "answer must be a string", i)
        size = len(r.answer.encode("utf-8", "surrogatepass"))
        if size > limits.max_answer_bytes:
            raise RequestRejected(TOO_LARGE, f"answer is {size} bytes; the limit is {limits.max_answer_bytes}", i)
        try:
            config = normalised_config(r.config)
        except (ValueError, TypeError) as e:
            raise RequestRejected(BAD_CONFIG, f"config: {e}", i) from None
        out.append(Admitted(request=r, key=content_key(r.task_id, _task_source(r, i, catalog, limits), r.answer,
                                                       config, environment)))
    return out


def _task_source(r: EvalRequest, index: int, catalog: TaskCatalog, limits: Limits) -> str:
    if r.task_source is not None:
        if len(r.task_source.encode("utf-8", "surrogatepass")) > limits.max_task_source_bytes:
            raise RequestRejected(TOO_LARGE, f"task_source is larger than {limits.max_task_source_bytes} bytes", index)
        try:
            Task(task_id=r.task_id, source=r.task_source, origin="inline").validate()
        except TaskError as e:
            raise RequestRejected(UNKNOWN_TASK, f"task_source: {e}", index) from None
        return r.task_source
    try:
        return catalog.source(r.task_id)
    except TaskError as e:
        raise RequestRejected(UNKNOWN_TASK, f"task_id: {e}", index) from None
