"""`kernelgym tasks generate` and `kernelgym tasks overlap`: registered by `kernelgym/cli.py`.

User mistakes raise ValueError, which the main CLI prints as a one-line error (exit code 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

_console = Console() if sys.stdout.isatty() else Console(width=160)


def add_taskgen_parsers(tasks_sub: argparse._SubParsersAction) -> None:
    """Add `generate` and `overlap` under the `kernelgym tasks` subcommands."""
    g = tasks_sub.add_parser("generate", help="generate verified KernelBench-style tasks from op chains "
                                              "(seeded; writes train/heldout splits, stats.json, verdicts.jsonl)")
    g.add_argument("--out", type=Path, required=True, help="output directory")
    g.add_argument("--n", type=int, default=2000, help="accepted tasks wanted")
    g.add_argument("--seed", type=int, default=0, help="generator seed (same seed, same tasks)")
    g.add_argument("--format", default="parquet", choices=["parquet", "jsonl"],
                   help="split files: parquet (needs datasets) or jsonl (no dependencies)")
    g.add_argument("--device", default="cpu", help="cpu (small size, runtime estimated) or cuda (full size, timed)")
    g.add_argument("--jobs", type=int, default=0, help="validation processes on cpu (0: every core)")
    g.add_argument("--heldout-fraction", type=float, default=0.1, help="share of op-chain signatures held out")
    g.add_argument("--heldout-families", default="", metavar="FAMILY,...",
                   help="op families held out whole, e.g. pooling,loss: every chain with one of their ops goes to "
                        "the heldout_family split, so no train task has them (default: none, the splits of earlier runs)")
    g.add_argument("--only-split", default="", choices=["", "train", "heldout", "heldout_family"],
                   help="keep only this split's tasks, skipping the others before validation: grows a held-out set "
                        "(splits are a salted hash of the op chain, the same in every build)")
    g.add_argument("--max-candidates", type=int, default=0,
                   help="give up after this many candidates (0: 10 * n; 100 * n with --only-split)")
    g.add_argument("--max-seconds", type=float, default=0.0, help="stop after this long, keeping what passed")
    g.add_argument("--exclude", default="", help="task spec of an evaluation set (kernelbench:PATH, builtin, ...): "
                                                 "reject candidates with its normalised code or torch call chain")
    g.add_argument("--audit-trials", type=int, default=2, help="seeds per input distribution in the audit")
    g.add_argument("--min-ms", type=float, default=0.02, help="cuda: shortest eager median kept")
    g.add_argument("--max-ms", type=float, default=50.0, help="cuda: longest eager median kept")
    g.add_argument("--stats", type=Path, default=None, help="also write the statistics JSON here")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    g.set_defaults(func=_cmd_generate)

    o = tasks_sub.add_parser("overlap", help="overlap of a task set with an evaluation set by normalised code")
    o.add_argument("generated", help="task spec of the set to check, e.g. gen:DIR")
    o.add_argument("evaluation", help="task spec of the evaluation set, e.g. kernelbench:PATH or builtin")
    o.add_argument("--threshold", type=float, default=0.8, help="5-gram Jaccard similarity counted as near")
    o.add_argument("--json-out", type=Path, default=None, help="also write every matching pair as JSON")
    o.set_defaults(func=_cmd_overlap)


def _cmd_generate(args: argparse.Namespace) -> int:
    from kernelgym.taskgen.build import BuildConfig, generate_tasks, write_outputs
    from kernelgym.taskgen.validate import ValidationConfig

    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError("--device cuda asked for, but torch sees no GPU (use --device cpu)")
    validation = ValidationConfig(device=args.device, audit_trials=args.audit_trials, min_ms=args.min_ms,
                                  max_ms=args.max_ms)
    from kernelgym.taskgen.splits import parse_families

    config = BuildConfig(n=args.n, seed=args.seed, heldout_fraction=args.heldout_fraction,
                         heldout_families=parse_families(args.heldout_families), jobs=args.jobs,
                         only_split=args.only_split, max_candidates=args.max_candidates, max_seconds=args.max_seconds, exclude=args.exclude,
                         validation=validation)
    result = generate_tasks(config, progress=not args.no_progress)
    paths = write_outputs(result, args.out, args.format)
    if args.stats:
        args.stats.parent.mkdir(parents=True, exist_ok=True)
        args.stats.write_text(json.dumps(result.stats, indent=2) + "\n", encoding="utf-8")
    _console.print(stats_table(result.stats))
    _console.print("wrote " + ", ".join(str(p) for p in paths))
    return 0 if result.stats["accepted"] >= args.n else 1


def stats_table(stats: dict) -> Table:
    """The headline numbers of a generation run: counts, time, rejections, splits, most used ops."""
    t = Table(title="Task generation", show_header=False)
    t.add_column("what")
    t.add_column("value")
    t.add_row("accepted / candidates", f"{stats['accepted']} / {stats['candidates']}"
              + (f" (stopped: {stats['stopped']})" if stats["stopped"] else ""))
    t.add_row("time", f"{stats['seconds']:.1f} s ({stats['tasks_per_second']} tasks/s)")
    t.add_row("rejected", ", ".join(f"{r} {n}" for r, n in stats["rejected_by_reason"].items() if n) or "none")
    t.add_row("splits", ", ".join(f"{s}: {v['tasks']} tasks / {v['signatures']} signatures"
                                  for s, v in stats["splits"].items())
              + f"; shared signatures: {stats['signatures_shared_between_splits']}")
    t.add_row("chain length", ", ".join(f"{k}: {v}" for k, v in stats["chain_length"].items()))
    t.add_row("dtype", ", ".join(f"{k}: {v}" for k, v in stats["dtype"].items()))
    t.add_row("top ops", ", ".join(f"{k} {v}" for k, v in list(stats["ops"].items())[:12]))
    for key in ("flops", "bytes_min", "est_ms", "eager_ms"):
        q = stats["sizes"].get(key)
        if q:
            t.add_row(f"{key} (p10 / median / p90)", f"{q['p10']:.3g} / {q['median']:.3g} / {q['p90']:.3g}")
    return t


def _cmd_overlap(args: argparse.Namespace) -> int:
    from kernelgym.taskgen.splits import overlap_report
    from kernelgym.tasks.loaders import resolve_tasks

    if not 0 < args.threshold <= 1:
        raise ValueError("--threshold must be in (0, 1]")
    generated, evaluation = resolve_tasks(args.generated), resolve_tasks(args.evaluation)
    if not generated or not evaluation:
        raise ValueError("both task specs must name at least one task")
    report = overlap_report(generated, evaluation, args.threshold)
    _console.print(report.table())
    if args.json_out:
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps({**report.summary(), "pairs": {
            "exact": report.exact, "same_calls": report.same_calls, "near": report.near}}, indent=1))
    return 0
