"""The parent's first two requests to an answer's process, `load` and `build`, and the task's
inputs-only source a process needs to draw trial inputs itself (shared by both engines)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernelgym.judge.reference import Reference
from kernelgym.tasks.task import Task, inputs_only_source


def load_message(reference: Reference, code_path: Path, device: str) -> dict[str, Any]:
    """The `load` request: the answer's path and the task's inputs-only source. Nothing of the
    reference model (its source, helpers, docstrings) and no seed: the init seed comes with
    `build`, after the answer's import-time code has run."""
    return {"op": "load", "code_path": str(code_path), "device": device, "num_inputs": reference.num_inputs(),
            **inputs_source(reference)}


def build_message(reference: Reference, variant: bool = False) -> dict[str, Any]:
    msg = {"op": "build", "init_inputs": reference.init_inputs, "init_seed": reference.init_seed}
    if variant:
        msg |= {"variant": True, **inputs_source(reference)}
    return msg


def inputs_source(reference: Reference) -> dict[str, Any]:
    source = inputs_only_source(reference.task.source)
    bound = Task(task_id="inputs", source=source).load_module("full").__dict__
    constants = {k: v for k, v in reference.overrides.items() if k in bound}  # only what get_inputs reads
    return {"inputs_source": source, "task_size": reference.size, "constants": constants}


