"""Tests for `kernelgym/env/prompts.py` with the shipped templates and a real built-in task."""

from string import Template

import pytest

from kernelgym.env.prompts import PromptTemplates, feedback_messages, first_messages, load_templates
from kernelgym.tasks.loaders import load_builtin
from kernelgym.tasks.task import Task


def test_first_messages_show_the_task_source():
    task = load_builtin("relu")[0]
    messages = first_messages(task, load_templates())
    assert [m["role"] for m in messages] == ["system", "user"]
    system, user = messages[0]["content"], messages[1]["content"]
    assert "class ModelNew(nn.Module)" in system and "@triton.jit" in system and "```python" in system
    assert task.source.strip() in user
    assert "$" not in user.replace(task.source.strip(), "")  # every placeholder was filled
    assert "partial replacement" not in user  # relu does not allow torch ops


def test_first_messages_mention_partial_replacement_when_the_task_allows_it():
    source = load_builtin("relu")[0].source + "\nKERNELGYM_ALLOW_TORCH_OPS = True\n"
    user = first_messages(Task("relu_partial", source), load_templates())[1]["content"]
    assert "partial replacement" in user


def test_feedback_messages_wrap_the_feedback():
    [message] = feedback_messages("Status: wrong_output\n\n1 of 3 trials failed", load_templates())
    assert message["role"] == "user"
    assert "1 of 3 trials failed" in message["content"] and "```python" in message["content"]


def test_source_with_dollar_signs_is_shown_verbatim():
    templates = PromptTemplates(Template("sys"), Template("$task_id\n$source\n$torch_ops_note"), Template("$feedback"))
    task = Task("t", "x = '$HOME ${y}'")
    assert first_messages(task, templates)[1]["content"] == "t\nx = '$HOME ${y}'"


def test_missing_template_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="system.md"):
        load_templates(tmp_path)
