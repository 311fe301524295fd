"""Reward functions: pure maps from one `EvalResult` (and a `RewardConfig`) to a scalar.

Every reward here takes ``(result, cfg)`` and is listed in `REWARDS`, so configs pick one by name.
A result counts as a *pass* only when the judge said OK, marked it correct and found no cheat.
Where timing or profiling was not measured (CPU runs, ``timing_note`` set), the missing speedup
or Triton share contributes nothing; the reward for correctness is kept.
"""

from __future__ import annotations

import math
from typing import Callable

from kernelgym.judge.extract import python_blocks
from kernelgym.judge.result import EvalResult, Status
from kernelgym.judge.static_checks import analyse
from rewards.config import REWARD_NAMES, RewardConfig

RewardFn = Callable[[EvalResult, RewardConfig], float]

_COMPILE_STAGE = {Status.INVALID_ANSWER, Status.COMPILE_ERROR}
_RUNTIME_STAGE = {Status.RUNTIME_ERROR, Status.TIMEOUT, Status.CRASHED, Status.OOM}


def is_cheat(result: EvalResult) -> bool:
    """A threat rule fired: the status says so, or a verdict is attached."""
    return result.status is Status.CHEAT or bool(result.cheats)


def is_compiled(result: EvalResult) -> bool:
    """The answer built `ModelNew` and its Triton kernels compiled, as KernelBench counts it: a
    `compile_error` is never compiled, also in results stored by a judge that set `compiled` before
    the kernels' first launch (the in-process engine before 2026-11-27)."""
    return result.compiled and result.status is not Status.COMPILE_ERROR


def is_pass(result: EvalResult) -> bool:
    """Judged OK, correct on every trial, and no cheat verdict."""
    return result.ok and result.correct and not is_cheat(result)


def speedup(result: EvalResult, cfg: RewardConfig) -> float | None:
    """Speedup against the baseline `cfg.baseline` names; None when it was not measured."""
    return result.speedup_eager if cfg.baseline == "eager" else result.speedup_compile


def triton_share(result: EvalResult) -> float:
    """Share of device time in the answer's own Triton kernels; 0.0 when there is no profile."""
    return result.profile.triton_share if result.profile is not None else 0.0


def drkernel_reward(result: EvalResult, cfg: RewardConfig) -> float:
    """Dr. Kernel's reward: 0 unless a pass, else 0.5 + 0.5·min(speedup, cap) + 0.5·triton_share.

    A missing speedup or profile (not measured, e.g. on CPU) makes its term 0; the 0.5 stays.
    """
    if not is_pass(result):
        return 0.0
    s = speedup(result, cfg)
    speed_term = 0.5 * min(max(s, 0.0), cfg.speedup_cap) if s is not None else 0.0
    return 0.5 + speed_term + 0.5 * triton_share(result)


def shaped_reward(result: EvalResult, cfg: RewardConfig) -> float:
    """Graded by the stage reached: cheat ≤ invalid/compile < runtime < wrong output < pass.

    A pass earns max(0, 1 + ln(min(speedup, cap))): 1 at parity, 0 at ≤ 1/e, 1 + ln(cap) at most;
    1 when the speedup was not measured. Timeouts, crashes and OOM count as the runtime stage;
    a `system_error` (the service could not judge it) earns 0.
    """
    if result.status is Status.SYSTEM_ERROR:
        return 0.0  # the service failed, not the answer: neither reward nor punish it
    if is_cheat(result):
        return cfg.cheat_penalty
    if result.status in _COMPILE_STAGE:
        return cfg.stage_penalty_compile
    if result.status in _RUNTIME_STAGE:
        return cfg.stage_penalty_runtime
    if not is_pass(result):  # WRONG_OUTPUT, or OK without correct: outputs were not trusted
        return cfg.stage_penalty_wrong_output
    s = speedup(result, cfg)
    if s is None:
        return 1.0
    if s <= 0:
        return 0.0
    return max(0.0, 1.0 + math.log(min(s, cfg.speedup_cap)))


def cheat_penalty_reward(result: EvalResult, cfg: RewardConfig) -> float:
    """`drkernel_reward`, except that a cheat earns `cfg.cheat_penalty` (< 0) instead of 0."""
    return cfg.cheat_penalty if is_cheat(result) else drkernel_reward(result, cfg)


def format_reward(answer_text: str) -> float:
    """1.0 if the answer has a fenced python block defining class ModelNew and a Triton kernel, else 0.0.

    Uses the judge's own extractor and AST scan; a kernel under ``@triton.autotune`` counts.
    """
    blocks = python_blocks(answer_text)
    if not blocks:  # only a closed block counts as formatted: not bare code, not a block cut off
        return 0.0
    code = blocks[-1]  # the block the judge runs (extract_code's first choice)
    try:
        report = analyse(code, allow_torch_compute=True)
    except (SyntaxError, ValueError):
        return 0.0
    return 1.0 if report.has_model_new and report.kernels else 0.0


REWARDS: dict[str, RewardFn] = {
    "drkernel": drkernel_reward,
    "shaped": shaped_reward,
    "cheat_penalty": cheat_penalty_reward,
}
if tuple(REWARDS) != REWARD_NAMES:  # every name a RewardConfig accepts has exactly one reward function
    raise RuntimeError(f"rewards.REWARDS {tuple(REWARDS)} and config.REWARD_NAMES {REWARD_NAMES} differ")


def get_reward(name: str) -> RewardFn:
    """The reward function registered as `name`; ValueError listing the known names otherwise."""
    try:
        return REWARDS[name]
    except KeyError:
        raise ValueError(f"unknown reward {name!r}; known rewards: {', '.join(sorted(REWARDS))}") from None


def total_reward(result: EvalResult, cfg: RewardConfig, answer_text: str = "") -> float:
    """The configured reward plus ``cfg.format_weight · format_reward(answer_text)``."""
    value = get_reward(cfg.name)(result, cfg)
    if cfg.format_weight:
        value += cfg.format_weight * format_reward(answer_text)
    return value
