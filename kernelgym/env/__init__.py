"""The multi-turn environment: prompt templates and the feedback a model sees after each answer.

Names load on first use, so that `kernelgym.env.adapters` (the client side of a served
environment) imports without the judge, torch or triton.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOME = {
    "EnvConfig": "environment", "EnvError": "environment", "KernelEnv": "environment",
    "EpisodeState": "episode", "KernelObservation": "episode", "render_feedback": "feedback",
    "PromptTemplates": "prompts", "feedback_messages": "prompts", "first_messages": "prompts",
    "load_templates": "prompts",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
