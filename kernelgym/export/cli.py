"""`kernelgym data export`: registered by `kernelgym/cli.py`.

User mistakes raise ValueError, which the main CLI prints as a one-line error (exit code 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

_console = Console() if sys.stdout.isatty() else Console(width=160)


def add_data_parser(sub: argparse._SubParsersAction) -> None:
    """Add `kernelgym data export`."""
    d = sub.add_parser("data", help="datasets out of KernelGym")
    dsub = d.add_subparsers(dest="data_command", required=True)
    e = dsub.add_parser("export", help="trajectories (store and/or episode logs) -> trajectories, sft and "
                                       "best-of-n datasets in TRL's chat format")
    e.add_argument("--store", type=Path, action="append", default=[],
                   help="result store: the service's .db or a Store.export .jsonl (repeatable)")
    e.add_argument("--logs", type=Path, action="append", default=[],
                   help="episode log (.jsonl of trajectory rows) or an exported trajectories file (repeatable)")
    e.add_argument("--tasks", default=None, help="task spec for store requests that carry no inline source "
                                                 "(e.g. builtin, gen:DIR, kernelbench:PATH)")
    e.add_argument("--out", type=Path, required=True, help="output directory")
    e.add_argument("--format", default="parquet", choices=["parquet", "jsonl"], help="file format of the datasets")
    e.add_argument("--reward", default="drkernel", help="reward for store requests (a key of rewards.REWARDS)")
    e.add_argument("--baseline", default="eager", choices=["eager", "compile"], help="speedup baseline")
    e.add_argument("--min-triton-share", type=float, default=0.0, help="SFT filter: tau")
    e.add_argument("--min-speedup", type=float, default=0.0, help="SFT filter: p")
    e.add_argument("--best-of", type=int, default=0, help="also write best_of_n: the top N per group (0: skip)")
    e.add_argument("--min-reward", type=float, default=None, help="best-of-n: least reward kept")
    e.set_defaults(func=_cmd_export)


def _cmd_export(args: argparse.Namespace) -> int:
    from kernelgym.export.selection import SFT_COLUMNS, SFTFilter, best_of_n_rows, sft_rows
    from kernelgym.export.tables import features_of, write_table
    from kernelgym.export.trajectories import TRAJECTORY_COLUMNS, from_log, from_store
    from rewards.config import RewardConfig

    if not args.store and not args.logs:
        raise ValueError("name at least one source: --store and/or --logs")
    if args.best_of < 0:
        raise ValueError("--best-of must be >= 0")
    reward_config = RewardConfig(name=args.reward, baseline=args.baseline)
    sft_filter = SFTFilter(args.min_triton_share, args.min_speedup, reward_config)
    tasks = None
    if args.tasks:
        from kernelgym.tasks.loaders import resolve_tasks

        tasks = {t.task_id: t for t in resolve_tasks(args.tasks)}
    trajectories, skipped = [], Counter()
    for path in args.store:
        found, left_out = from_store(path, tasks, reward_config)
        trajectories += found
        skipped.update(left_out)
    for path in args.logs:
        if not path.is_file():
            raise ValueError(f"episode log {path} does not exist")
        trajectories += from_log(path)
    ids = Counter(t.trajectory_id for t in trajectories)
    if any(n > 1 for n in ids.values()):
        raise ValueError(f"trajectory ids repeat across sources (e.g. {next(k for k, n in ids.items() if n > 1)})")
    rows = [t.to_row(reward_config) for t in trajectories]
    sft = sft_rows(trajectories, sft_filter)
    written = [write_table(rows, args.out / "trajectories", args.format, lambda: features_of(TRAJECTORY_COLUMNS)),
               write_table(sft, args.out / "sft", args.format, lambda: features_of(SFT_COLUMNS))]
    bon = []
    if args.best_of:
        bon = best_of_n_rows(trajectories, args.best_of, args.min_reward, sft_filter)
        written.append(write_table(bon, args.out / "best_of_n", args.format, lambda: features_of(SFT_COLUMNS)))
    stats = {"trajectories": len(rows), "turns": sum(r["num_turns"] for r in rows),
             "statuses": dict(Counter(t["status"] for r in rows for t in r["turns"]).most_common()),
             "passed_trajectories": sum(r["passed"] for r in rows), "skipped": dict(skipped), "sft": len(sft),
             "best_of_n": len(bon), "filter": {"min_triton_share": args.min_triton_share,
                                               "min_speedup": args.min_speedup, "best_of": args.best_of,
                                               "min_reward": args.min_reward, "reward": args.reward}}
    (args.out / "export_stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    table = Table(title="Export", show_header=False)
    for key in ("trajectories", "turns", "passed_trajectories", "sft", "best_of_n"):
        table.add_row(key, str(stats[key]))
    table.add_row("statuses", ", ".join(f"{k} {v}" for k, v in stats["statuses"].items()) or "-")
    table.add_row("skipped", ", ".join(f"{k} {v}" for k, v in skipped.items()) or "-")
    _console.print(table)
    _console.print("wrote " + ", ".join(str(p) for p in written))
    return 0
