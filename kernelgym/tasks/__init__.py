"""Tasks: the `Task` type and its loaders."""

from kernelgym.tasks.loaders import (
    builtin_answer_path,
    builtin_task_ids,
    data_dir,
    load_builtin,
    load_hf_tasks,
    load_kernelbench_dir,
    load_task_dir,
    load_task_file,
    resolve_tasks,
)
from kernelgym.tasks.task import Task, TaskError

__all__ = [
    "Task",
    "TaskError",
    "builtin_answer_path",
    "builtin_task_ids",
    "data_dir",
    "load_builtin",
    "load_hf_tasks",
    "load_kernelbench_dir",
    "load_task_dir",
    "load_task_file",
    "resolve_tasks",
]
