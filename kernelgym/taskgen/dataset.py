"""The generated task set on disk: its schema, writing it, and reading it back as `Task`s.

One file per split (`train.parquet`, `heldout.parquet`, with held-out op families also
`heldout_family.parquet`; or `.jsonl` where `datasets` is not
installed, e.g. on a bare GPU box). The columns include the KernelBench dataset's own (`code`,
`level`, `name`, `problem_id`), so tools written for KernelBench read it too, plus `task_id`,
`split` and the difficulty metadata. `resolve_tasks("gen:DIR[:split]")` loads it.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernelgym.export.tables import features_of, read_table, write_table
from kernelgym.taskgen.splits import HELDOUT, HELDOUT_FAMILY, TRAIN
from kernelgym.tasks.task import Task, TaskError

SPLITS = (TRAIN, HELDOUT, HELDOUT_FAMILY)
# column -> feature spelling (`kernelgym.export.tables.feature`)
COLUMNS: dict[str, str] = {
    "task_id": "string", "name": "string", "code": "string", "level": "int64", "problem_id": "int64",
    "split": "string", "signature": "string", "ops": "list:string", "categories": "list:string",
    "num_ops": "int64", "dtype": "string", "input_shapes": "list2:int64", "output_shape": "list:int64",
    "flops": "float64", "bytes_eager": "float64", "bytes_min": "float64", "params": "float64",
    "footprint_bytes": "float64", "est_ms": "float64", "eager_ms": "float64", "ast_hash": "string",
    "notes": "list:string", "seed": "int64", "index": "int64",
}
_META_COLUMNS = ("signature", "ops", "categories", "num_ops", "dtype", "input_shapes", "output_shape", "flops",
                 "bytes_eager", "bytes_min", "params", "footprint_bytes", "est_ms", "eager_ms", "split")


def write_split(rows: list[dict[str, Any]], path: Path, fmt: str) -> Path:
    """Write one split's rows as `path` + `.parquet` (through `datasets`) or `.jsonl`."""
    rows = [{name: row.get(name) for name in COLUMNS} for row in rows]
    return write_table(rows, path, fmt, lambda: features_of(COLUMNS))


def read_rows(path: str | Path, split: str | None = None) -> list[dict[str, Any]]:
    """Rows of a generated set: a directory of split files (all splits, or `split`) or one file."""
    path = Path(path)
    if path.is_dir():
        names = [split] if split else list(SPLITS)
        files = [f for s in names for f in (path / f"{s}.parquet", path / f"{s}.jsonl") if f.is_file()]
        if not files:
            raise TaskError(f"{path} holds no generated split ({', '.join(f'{s}.parquet|.jsonl' for s in names)})")
        return [row for f in files for row in _read(f)]
    if not path.is_file():
        raise TaskError(f"generated task set {path} does not exist")
    return [r for r in _read(path) if split is None or r.get("split") == split]


def load_generated(path: str | Path, split: str | None = None) -> list[Task]:
    """Generated tasks as `Task`s; the difficulty metadata goes into `Task.meta`."""
    return [row_to_task(row, f"gen:{path}") for row in read_rows(path, split)]


def row_to_task(row: dict[str, Any], origin: str) -> Task:
    missing = [c for c in ("task_id", "code") if c not in row]
    if missing:
        raise TaskError(f"generated task row lacks columns {missing}")
    return Task(task_id=row["task_id"], source=row["code"], origin=origin, level=row.get("level"),
                problem_id=row.get("problem_id"), name=row.get("name") or row["task_id"],
                meta={k: row[k] for k in _META_COLUMNS if k in row})


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        return read_table(path)
    except ValueError as e:
        raise TaskError(str(e)) from None


def rows_by_split(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Rows per split: `train` and `heldout` always (a file each, empty or not), others when they have rows."""
    out: dict[str, list[dict[str, Any]]] = {TRAIN: [], HELDOUT: []}
    for row in rows:
        out.setdefault(row["split"], []).append(row)
    return out
