"""Judge configuration: one dataclass, every field documented, validated on construction."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

# Element-wise tolerance |out - ref| <= atol + rtol * |ref|, by output dtype name.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-6, 1e-6),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (2e-2, 2e-2),
}
# Cycled over the trials; the default five trials see each once (`inputs.make_inputs`).
INPUT_DISTRIBUTIONS = ("task", "signed", "wide", "offset", "huge")


@dataclass
class JudgeConfig:
    """How one answer is judged. Defaults are what training and evaluation should use."""

    device: str = field(default="auto", metadata={"help": "cpu, cuda, cuda:N or auto (cuda when available)"})
    size: str = field(default="auto", metadata={"help": "full, small or auto (full on cuda, small on cpu)"})
    num_trials: int = field(default=5, metadata={"help": "correctness trials, each with fresh secret-seeded inputs"})
    stop_at_first_failure: bool = field(default=True, metadata={
        "help": "end correctness at the first trial whose output fails (its verdict is decided; later trials, "
                "the probe and the variant are neither drawn nor run). An answer that passes runs every trial"})
    distributions: tuple[str, ...] = field(
        default=INPUT_DISTRIBUTIONS, metadata={"help": "input distributions, cycled over trials"}
    )
    tolerances: dict[str, tuple[float, float]] = field(
        default_factory=lambda: dict(DEFAULT_TOLERANCES), metadata={"help": "dtype name -> (atol, rtol)"}
    )
    precision: str = field(default="derived", metadata={
        "help": "derived: a float32 output is compared within what an fp32 computation can err by on it, from the "
                "reference also run in float64 (TF32's allowance where the task multiplies matrices; "
                "kernelgym/judge/precision.py); flat: the dtype tolerances above only, atol scaled by max(1, mean|ref|)"})
    tf32_scale_fit: bool | None = field(default=None, metadata={
        "help": "derived precision, TF32 class: above the class's 1.1e-3 mean relative error allow only a common "
                "scale of the output (truncated TF32 operands shrink every product alike), so an answer cannot "
                "spend that allowance on a bfloat16 buffer (red-team round tf32). None: KERNELGYM_TF32_SCALE_FIT=1 "
                "turns it on (default off until it has run on a GPU)"})
    timeout_s: float = field(default=300.0, metadata={"help": "wall-clock limit for the whole candidate process"})
    max_answer_bytes: int = field(default=1_000_000, metadata={"help": "answers larger than this are invalid"})
    max_log_bytes: int = field(default=1_000_000, metadata={"help": "stdout+stderr beyond this is an output flood"})
    max_message_bytes: int = field(default=4 << 30, metadata={"help": "largest message the child may send back"})
    cpu_memory_gb: float = field(default=16.0, metadata={"help": "address-space limit of the child on cpu runs"})
    timing_warmup: int = field(default=5, metadata={"help": "untimed calls before timing"})
    timing_reps: int = field(default=50, metadata={"help": "timed calls at least; the median is reported"})
    timing_budget_s: float = field(default=0.0, metadata={
        "help": "keep timing past timing_reps until the measurement has run this long (at most 10,000 calls); "
                "0: exactly timing_reps calls. Each second is a second of exclusive GPU time per correct answer"})
    timing_input_sets: int = field(default=3, metadata={"help": "fresh input sets (never used in correctness) cycled during timing"})
    l2_flush_bytes: int = field(default=256 << 20, metadata={"help": "buffer written between timed calls"})
    time_compile_baseline: bool = field(default=True, metadata={"help": "also time torch.compile of the reference"})
    profile: bool = field(default=True, metadata={"help": "profile the answer with torch.profiler (cuda only)"})
    min_triton_share: float = field(
        default=0.5, metadata={"help": "cuda: the answer's own Triton kernels must take more than this share of "
                                  "device time; at or below it is RH-03"}
    )
    allow_torch_ops: bool | None = field(
        default=None, metadata={"help": "partial replacement: may torch compute stay beside the answer's Triton "
                                "kernels? None: the task decides (KERNELGYM_ALLOW_TORCH_OPS, default no). "
                                "When allowed, the torch-compute rules (RH-01 static, RH-03 share) are off; "
                                "triton_share is reported either way"}
    )
    engine: str = field(default="replay", metadata={
        "help": "replay (v4): the answer's Python only records its kernel launches; correctness, timing and "
                "profile come from replaying them in a process that runs no answer Python. inprocess: the "
                "earlier judge (timing and checks inside the answer's process), kept for comparison"})
    device_transfer: bool = field(default=True, metadata={
        "help": "cuda, replay engine: the replay process keeps trial outputs and the measurement's kept outputs in "
                "its GPU memory and the judge copies them device to device through CUDA IPC "
                "(kernelgym/judge/device_transfer.py), falling back to the host output area where IPC fails; "
                "False: always the output area and pinned host buffers"})
    static_checks: bool = field(default=True, metadata={"help": "run the AST threat rules before anything runs"})
    seed: int | None = field(default=None, metadata={"help": "master seed; None draws a secret one per evaluation"})

    def __post_init__(self) -> None:
        if self.tf32_scale_fit is None:  # resolved here, so the service's content key holds what was judged
            self.tf32_scale_fit = os.environ.get("KERNELGYM_TF32_SCALE_FIT") == "1"
        if self.size not in ("auto", "full", "small"):
            raise ValueError(f"JudgeConfig.size must be auto, full or small, not {self.size!r}")
        if not (self.device in ("auto", "cpu", "cuda") or self.device.startswith("cuda:")):
            raise ValueError(f"JudgeConfig.device must be cpu, cuda, cuda:N or auto, not {self.device!r}")
        if self.engine not in ("replay", "inprocess"):
            raise ValueError(f"JudgeConfig.engine must be replay or inprocess, not {self.engine!r}")
        if self.precision not in ("derived", "flat"):
            raise ValueError(f"JudgeConfig.precision must be derived or flat, not {self.precision!r}")
        if self.num_trials < 1:
            raise ValueError("JudgeConfig.num_trials must be >= 1")
        unknown = set(self.distributions) - set(INPUT_DISTRIBUTIONS)
        if unknown or not self.distributions:
            raise ValueError(f"JudgeConfig.distributions must be a non-empty subset of {INPUT_DISTRIBUTIONS}")
        self.distributions = tuple(self.distributions)
        if self.timing_budget_s < 0:
            raise ValueError("JudgeConfig needs timing_budget_s >= 0")
        if self.timing_input_sets < 1 or self.timing_reps < self.timing_input_sets or self.timing_warmup < 0:
            raise ValueError("JudgeConfig needs timing_input_sets >= 1, timing_reps >= timing_input_sets, "
                             "timing_warmup >= 0")
        if self.timeout_s <= 0:
            raise ValueError("JudgeConfig.timeout_s must be positive")

    def resolved_device(self) -> str:
        """The concrete device string: `auto` becomes `cuda` when torch sees a GPU, else `cpu`."""
        if self.device != "auto":
            return self.device
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def resolved_size(self, device: str) -> str:
        if self.size != "auto":
            return self.size
        return "small" if device == "cpu" else "full"

    def tolerance(self, dtype_name: str) -> tuple[float, float]:
        return self.tolerances.get(dtype_name, DEFAULT_TOLERANCES["float32"])

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "JudgeConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown JudgeConfig fields: {sorted(unknown)}")
        return cls(**d)
