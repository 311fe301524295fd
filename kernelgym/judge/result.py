"""The judge's one result type: `EvalResult`, typed, JSON-serialisable and versioned.

This module is the single place that knows the statuses. Rewards, feedback rendering, the
service and exports all read `EvalResult`; none of them should re-derive a status.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

RESULT_VERSION = 1


class Status(str, Enum):
    """Outcome of one evaluation, in the order the judge's phases can produce them."""

    OK = "ok"
    INVALID_ANSWER = "invalid_answer"  # no usable code / ModelNew / signature; the answer itself is malformed
    COMPILE_ERROR = "compile_error"  # import, init or Triton JIT failure
    RUNTIME_ERROR = "runtime_error"  # forward raised
    WRONG_OUTPUT = "wrong_output"  # ran, but outputs do not match the reference
    CHEAT = "cheat"  # a threat rule (RH-xx) fired
    TIMEOUT = "timeout"  # wall-clock limit hit; the whole process group was killed
    CRASHED = "crashed"  # process died: signal, os._exit, CUDA fault, output flood
    OOM = "oom"  # host or device out of memory
    SYSTEM_ERROR = "system_error"  # the service could not judge it (workers kept dying; retries spent): not the answer's fault


@dataclass
class CheatVerdict:
    """One threat rule that fired: `rule` is an id from THREATS.md (e.g. ``RH-01``)."""

    rule: str
    reason: str
    stage: str = "static"  # "static" (AST) or "runtime"


@dataclass
class TrialResult:
    """One correctness trial: fresh inputs from a secret seed, compared in the trusted parent."""

    index: int
    distribution: str
    grad_enabled: bool
    passed: bool
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    mismatched: int = 0
    total: int = 0
    message: str = ""


@dataclass
class RuntimeStats:
    """Per-call device times in milliseconds (median is the headline number)."""

    median_ms: float
    mean_ms: float
    std_ms: float
    min_ms: float
    max_ms: float
    n: int

    @classmethod
    def from_samples(cls, samples: list[float]) -> "RuntimeStats":
        import statistics

        return cls(
            median_ms=statistics.median(samples),
            mean_ms=statistics.fmean(samples),
            std_ms=statistics.pstdev(samples) if len(samples) > 1 else 0.0,
            min_ms=min(samples),
            max_ms=max(samples),
            n=len(samples),
        )


@dataclass
class KernelTime:
    """Device time of one kernel name in the profile; `own` marks the answer's Triton kernels."""

    name: str
    device_us: float
    calls: int
    own: bool


@dataclass
class Profile:
    """Kernel-level device time only; CPU time is never in the denominator of `triton_share`."""

    kernels: list[KernelTime]
    total_device_us: float
    triton_share: float


# Phases timed inside another phase: "reference" outputs are computed while the child compiles.
# Phases measured inside others (`reference` runs during `compile`; the rest break down
# `correctness` and `timing`): diagnostics that `wall_seconds` must not count twice.
NESTED_PHASES = ("reference", "gpu_wait", "trial_runs", "compare", "measure", "profile",
                 "output_transfer", "measure_vary", "measure_prepare", "measure_timed", "measure_hold",
                 "record", "record_draw", "record_warm", "record_calls", "record_wire",  # record: inside compile
                 "timing_draw", "timing_inputs")
# The replay engine checks the timed calls' outputs inside `timing`; the in-process engine after it.
REPLAY_NESTED_PHASES = ("timed_outputs",)


@dataclass
class EvalResult:
    """Everything one evaluation found. `status` is the verdict; the rest explains it."""

    status: Status
    message: str = ""
    task_id: str = ""
    version: int = RESULT_VERSION
    compiled: bool = False  # ModelNew built and its kernels compiled (a Triton compile error at launch: False)
    correct: bool = False
    trials: list[TrialResult] = field(default_factory=list)
    cheats: list[CheatVerdict] = field(default_factory=list)
    error: str = ""  # trimmed error text a model can act on
    fault: str = ""  # crash/timeout detail: "signal:SIGSEGV", "exit:3", "cuda_illegal_address", "output_flood", ...
    kernels_defined: list[str] = field(default_factory=list)
    kernels_launched: list[str] = field(default_factory=list)
    runtime: RuntimeStats | None = None
    reference_runtime: RuntimeStats | None = None
    compile_runtime: RuntimeStats | None = None
    speedup_eager: float | None = None
    speedup_compile: float | None = None
    profile: Profile | None = None
    timing_note: str = ""  # why timing/profiling was not measured, when it was not
    phase_seconds: dict[str, float] = field(default_factory=dict)
    device: str = ""
    gpu_name: str = ""
    size: str = ""  # "full" or "small"
    versions: dict[str, str] = field(default_factory=dict)
    engine: str = ""  # "replay" (v4: verdicts from a trusted replay of the recorded launches) or "inprocess"
    confinement: list[str] = field(default_factory=list)  # OS confinement layers active in the answer's child
    transfer: str = ""  # replay engine: how the replay's bulk replies came back, "device" (CUDA IPC) or "area"
    transfer_note: str = ""  # why not "device" where the config asked for it (the fallback's reason)
    # CPU seconds of each process the replay engine used ("answer", "replay"),
    # warm-pool start-up included: what one evaluation costs the host, read from /proc by the parent;
    # "judge": the trusted thread that ran this evaluation (its Python holds the judging process's GIL,
    # which every evaluation in flight in that process shares), "judge_<phase>" its part in each phase;
    # "answer.<op>", "replay.<op>": each process's CPU during each request op
    cpu_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status is Status.OK

    @property
    def wall_seconds(self) -> float:
        """Time the evaluation took: its phases, less those that run inside another one."""
        nested = NESTED_PHASES + (REPLAY_NESTED_PHASES if self.engine == "replay" else ())
        return sum(v for k, v in self.phase_seconds.items() if k not in nested)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["status"] = self.status.value
        return d

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "EvalResult":
        d = dict(d)
        if d.get("version", RESULT_VERSION) > RESULT_VERSION:
            raise ValueError(f"EvalResult version {d['version']} is newer than this kernelgym ({RESULT_VERSION})")
        d["status"] = Status(d["status"])
        d["trials"] = [TrialResult(**t) for t in d.get("trials", [])]
        d["cheats"] = [CheatVerdict(**c) for c in d.get("cheats", [])]
        for key in ("runtime", "reference_runtime", "compile_runtime"):
            if d.get(key) is not None:
                d[key] = RuntimeStats(**d[key])
        if d.get("profile") is not None:
            p = dict(d["profile"])
            p["kernels"] = [KernelTime(**k) for k in p["kernels"]]
            d["profile"] = Profile(**p)
        return cls(**d)

    @classmethod
    def from_json(cls, text: str) -> "EvalResult":
        return cls.from_dict(json.loads(text))
