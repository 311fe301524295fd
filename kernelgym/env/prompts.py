"""Prompt templates of the multi-turn environment and the chat messages built from them.

Templates are `string.Template` files under `data/prompts/` (edit them, not this module):
`system.md` (no placeholders), `user_first.md` (`$task_id`, `$source`, `$torch_ops_note`: empty, or a paragraph ending in a blank line) and
`user_feedback.md` (`$feedback`). A literal dollar sign in a template is written `$$`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from string import Template

from kernelgym.tasks.loaders import data_dir
from kernelgym.tasks.task import Task

TEMPLATE_FILES = {"system": "system.md", "user_first": "user_first.md", "user_feedback": "user_feedback.md"}
TORCH_OPS_NOTE = ("This task allows partial replacement: torch ops may stay beside your Triton kernels, "
                  "but the work that matters for speed should run in your own kernels.")


@dataclass(frozen=True)
class PromptTemplates:
    """The three templates of one conversation: system prompt, first user turn, feedback turn."""

    system: Template
    user_first: Template
    user_feedback: Template


def load_templates(directory: str | Path | None = None) -> PromptTemplates:
    """Read the templates from `directory` (default: `data/prompts` of the data directory)."""
    directory = Path(directory) if directory is not None else data_dir() / "prompts"
    texts = {}
    for key, name in TEMPLATE_FILES.items():
        path = directory / name
        if not path.is_file():
            raise FileNotFoundError(f"prompt template {name} is missing from {directory}")
        texts[key] = Template(path.read_text(encoding="utf-8"))
    return PromptTemplates(**texts)


def first_messages(task: Task, templates: PromptTemplates) -> list[dict[str, str]]:
    """System prompt and first user turn (showing the task's reference code) for `task`."""
    user = templates.user_first.substitute(
        task_id=task.task_id,
        source=task.source.strip(),
        torch_ops_note=TORCH_OPS_NOTE + "\n\n" if task.allows_torch_ops() else "",
    )
    return [
        {"role": "system", "content": templates.system.substitute().strip()},
        {"role": "user", "content": user.strip()},
    ]


def feedback_messages(feedback_text: str, templates: PromptTemplates) -> list[dict[str, str]]:
    """The user turn that follows an answer: rendered feedback and a request for a better answer."""
    return [{"role": "user", "content": templates.user_feedback.substitute(feedback=feedback_text.strip()).strip()}]

