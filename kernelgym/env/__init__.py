"""The multi-turn environment: prompt templates and the feedback a model sees after each answer."""

from kernelgym.env.environment import EnvConfig, EnvError, EpisodeState, KernelEnv, KernelObservation
from kernelgym.env.feedback import render_feedback
from kernelgym.env.prompts import PromptTemplates, feedback_messages, first_messages, load_templates

__all__ = ["EnvConfig", "EnvError", "EpisodeState", "KernelEnv", "KernelObservation", "PromptTemplates", "feedback_messages", "first_messages", "load_templates", "render_feedback"]
