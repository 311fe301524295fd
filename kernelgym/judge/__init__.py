"""The judge: score one answer against one task, honestly and in isolation."""

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.result import CheatVerdict, EvalResult, Profile, RuntimeStats, Status, TrialResult

__all__ = ["CheatVerdict", "EvalResult", "JudgeConfig", "Profile", "RuntimeStats", "Status", "TrialResult", "judge"]
