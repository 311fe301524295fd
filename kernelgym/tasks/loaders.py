"""Task loaders: our own files under `data/`, a KernelBench checkout, the KernelBench hub dataset.

`resolve_tasks(spec)` turns one command-line spec (or several, comma-separated) into tasks:
  * a built-in id (`relu`) or `builtin` for all of them,
  * a path to a task `.py` file or to a directory of them,
  * `kernelbench:PATH[:levelN]` for a local KernelBench checkout,
  * `hf:NAME_OR_PATH[:level_N]` for the hub dataset (or a local copy saved with `save_to_disk`),
  * `gen:PATH[:train|heldout|heldout_family]` for a set written by `kernelgym tasks generate` (a directory or
    one file).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from kernelgym.tasks.task import Task, TaskError

# What every command's task-spec argument says of the grammar above (`resolve_tasks`).
TASK_SPEC_HELP = ("a built-in id or builtin (all), a task .py file or directory, kernelbench:PATH[:levelN], "
                  "hf:NAME_OR_PATH[:level_N], gen:DIR[:train|heldout|heldout_family] (a set from `tasks generate` "
                  "or `data coldstart`'s OUT/tasks); comma-separated for several")
HF_DEFAULT_DATASET = "ScalingIntelligence/KernelBench"
HF_COLUMNS = ("code", "level", "name", "problem_id")


def data_dir() -> Path:
    """Where our own tasks and answers live: $KERNELGYM_DATA_DIR, the checkout's `data/`, or the wheel's copy."""
    env = os.environ.get("KERNELGYM_DATA_DIR")
    if env:
        return Path(env)
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "data", here.parents[1] / "_data"):
        if (candidate / "tasks").is_dir():
            return candidate
    raise TaskError("cannot find the built-in data directory; set KERNELGYM_DATA_DIR")


def load_task_file(path: str | Path, task_id: str | None = None) -> Task:
    """One task from a `.py` file; the id defaults to the file stem."""
    path = Path(path)
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"cannot read task file {path}: {e}") from None
    task = Task(task_id=task_id or path.stem, source=source, origin=str(path), name=path.stem)
    task.validate()
    return task


def load_task_dir(directory: str | Path) -> list[Task]:
    """All `*.py` task files of a directory, sorted by name."""
    directory = Path(directory)
    if not directory.is_dir():
        raise TaskError(f"task directory {directory} does not exist")
    return [load_task_file(p) for p in sorted(directory.glob("*.py")) if not p.name.startswith("_")]


def builtin_task_ids() -> list[str]:
    return sorted(p.stem for p in (data_dir() / "tasks").glob("*.py"))


def load_builtin(task_id: str | None = None) -> list[Task]:
    """Our own task set (all, or one id)."""
    tasks_dir = data_dir() / "tasks"
    if task_id is None:
        return load_task_dir(tasks_dir)
    path = tasks_dir / f"{task_id}.py"
    if not path.is_file():
        raise TaskError(f"unknown built-in task {task_id!r}; known: {', '.join(builtin_task_ids())}")
    return [load_task_file(path)]


def builtin_answer_path(task_id: str) -> Path:
    return data_dir() / "answers" / f"{task_id}.py"


def load_kernelbench_dir(root: str | Path, level: int | None = None) -> list[Task]:
    """Tasks of a local KernelBench checkout (`<root>/KernelBench/levelN/*.py` or `<root>/levelN/*.py`)."""
    root = Path(root)
    base = root / "KernelBench" if (root / "KernelBench").is_dir() else root
    level_dirs = sorted(p for p in base.glob("level*") if p.is_dir() and re.fullmatch(r"level\d+", p.name))
    if not level_dirs:
        raise TaskError(f"{root} is not a KernelBench checkout (no level1/, level2/, ... directories)")
    if level is not None:
        level_dirs = [p for p in level_dirs if p.name == f"level{level}"]
        if not level_dirs:
            raise TaskError(f"KernelBench checkout {root} has no level{level}/")
    tasks = []
    for level_dir in level_dirs:
        lvl = int(level_dir.name[len("level"):])
        for path in sorted(level_dir.glob("*.py"), key=_problem_number):
            pid = _problem_number(path)
            tasks.append(
                Task(
                    task_id=f"level{lvl}/{path.stem}",
                    source=path.read_text(encoding="utf-8"),
                    origin=f"kernelbench:{path}",
                    level=lvl,
                    problem_id=pid if pid >= 0 else None,
                    name=path.stem,
                )
            )
    return tasks


def load_hf_tasks(name_or_path: str = HF_DEFAULT_DATASET, split: str | None = None) -> list[Task]:
    """KernelBench-schema dataset (columns code, level, name, problem_id; splits level_1...level_4).

    A local directory is read with `datasets.load_from_disk`, anything else with `load_dataset`
    (the Hugging Face hub). `split=None` takes every split.
    """
    try:
        import datasets
    except ImportError:
        raise TaskError("loading a dataset needs the `datasets` package: pip install 'kernelgym[data]'") from None
    if Path(name_or_path).exists():
        loaded = datasets.load_from_disk(name_or_path)
    else:
        loaded = datasets.load_dataset(name_or_path)
    if isinstance(loaded, datasets.Dataset):
        splits = {split or "train": loaded}
    else:
        if split is not None and split not in loaded:
            raise TaskError(f"dataset {name_or_path} has no split {split!r}; it has {sorted(loaded)}")
        splits = {split: loaded[split]} if split else dict(sorted(loaded.items()))
    tasks = []
    for split_name, ds in splits.items():
        missing = [c for c in HF_COLUMNS if c not in ds.column_names]
        if missing:
            raise TaskError(f"dataset {name_or_path}:{split_name} lacks columns {missing}")
        for row in ds:
            tasks.append(
                Task(
                    task_id=f"level{row['level']}/{row['name']}",
                    source=row["code"],
                    origin=f"hf:{name_or_path}:{split_name}",
                    level=int(row["level"]),
                    problem_id=int(row["problem_id"]),
                    name=row["name"],
                )
            )
    return tasks


def resolve_tasks(spec: str) -> list[Task]:
    """Tasks named by one command-line spec (see the module docstring)."""
    if "," in spec:
        return [t for part in spec.split(",") if part.strip() for t in resolve_tasks(part.strip())]
    if spec == "builtin":
        return load_builtin()
    if spec.startswith("kernelbench:"):
        path, level = _split_level(spec[len("kernelbench:"):], r"level(\d+)")
        return load_kernelbench_dir(path, level)
    if spec.startswith("hf:"):
        rest = spec[len("hf:"):] or HF_DEFAULT_DATASET
        name, _, split = rest.rpartition(":") if re.search(r":level_\d+$", rest) else (rest, "", "")
        return load_hf_tasks(name, split or None)
    if spec.startswith("gen:"):
        from kernelgym.taskgen.dataset import SPLITS, load_generated

        rest = spec[len("gen:"):]
        head, _, tail = rest.rpartition(":")
        return load_generated(head, tail) if tail in SPLITS and head else load_generated(rest)
    path = Path(spec)
    if path.is_file():
        return [load_task_file(path)]
    if path.is_dir():
        return load_task_dir(path)
    if re.fullmatch(r"[A-Za-z0-9_]+", spec):
        return load_builtin(spec)
    raise TaskError(f"cannot resolve task spec {spec!r}: not a built-in id, file, directory, "
                    "kernelbench:, hf: or gen: spec")


def _split_level(text: str, pattern: str) -> tuple[str, int | None]:
    head, sep, tail = text.rpartition(":")
    m = re.fullmatch(pattern, tail) if sep else None
    return (head, int(m.group(1))) if m else (text, None)


def _problem_number(path: Path) -> int:
    m = re.match(r"(\d+)_", path.name)
    return int(m.group(1)) if m else -1
