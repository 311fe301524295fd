"""What `task.py` and `small.py` share, below both (task.py builds on small.py's size plans)."""

from __future__ import annotations

SMALL_OVERRIDES_NAME = "KERNELGYM_SMALL"  # a task's module-level dict of small-size constant overrides


class TaskError(ValueError):
    """A task source that cannot be used (missing `Model`, broken `get_inputs`, ...)."""
