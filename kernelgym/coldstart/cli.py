"""`kernelgym data coldstart`: build the verified cold-start corpus (see `corpus.py`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_coldstart_parser(dsub: argparse._SubParsersAction) -> None:
    c = dsub.add_parser("coldstart", help="verified cold-start corpus: answers written by construction for "
                                          "generated tasks, kept when the judge says ok, plus repair examples",
                        description="Build (or resume) a verified cold-start corpus in --out. On a CPU every answer "
                                    "is judged in Triton's interpreter at the small size: ~1 h per 1,000 verified "
                                    "answers on two cores. Ctrl-C stops it cleanly: the answers in flight are "
                                    "dropped, every verdict stays in OUT/judged.jsonl, the corpus is written from "
                                    "them (exit code 130), and the same command resumes.")
    c.add_argument("--n", type=int, default=1000, help="verified single-turn answers wanted (default 1000)")
    c.add_argument("--out", type=Path, required=True, help="output directory (a second run resumes it)")
    c.add_argument("--merge", type=Path, nargs="+", default=None, metavar="DIR",
                   help="instead of building: merge these corpora (other machines, devices or seeds) into --out")
    c.add_argument("--device", default="cpu", help="cpu (interpreter, small size; default) or cuda (full size)")
    c.add_argument("--seed", type=int, default=0, help="task generator seed (default 0)")
    c.add_argument("--answers-per-task", type=int, default=1, help="answers in different styles per task")
    c.add_argument("--repair-fraction", type=float, default=0.25, help="repair examples per verified answer")
    c.add_argument("--heldout-fraction", type=float, default=0.1, help="share of op-chain signatures held out")
    c.add_argument("--heldout-families", default="", metavar="FAMILY,...",
                   help="op families held out whole, e.g. pooling,loss: their chains form the heldout_family split "
                        "(never in the training rows; evaluate on gen:OUT/tasks:heldout_family). Default: none")
    c.add_argument("--heldout-tasks", type=int, default=0,
                   help="write at least this many tasks per held-out split to OUT/tasks for evaluation (more are composed, "
                        "never judged, when the corpus's own are fewer)")
    c.add_argument("--jobs", type=int, default=0, help="concurrent judge processes (0: one per core, at most 8)")
    c.add_argument("--max-tasks", type=int, default=0, help="give up after this many generated tasks (0: 4 * n)")
    c.add_argument("--trials", type=int, default=0, help="correctness trials per answer (0: the judge's default)")
    c.add_argument("--chunk", type=int, default=64,
                   help="answers judged per batch (default 64); --max-seconds is checked between batches, so a "
                        "time-boxed build overruns by up to one batch: use about 2 x --jobs there")
    c.add_argument("--max-seconds", type=float, default=0.0,
                   help="stop judging new answers after this long and write what passed (0: never)")
    c.add_argument("--no-warm-pool", action="store_true",
                   help="on the CPU, start every judge process afresh instead of forking them ahead of time")
    c.add_argument("--no-progress", action="store_true", help="no progress bar")
    c.set_defaults(func=_cmd_coldstart)


def _cmd_coldstart(args: argparse.Namespace) -> int:
    from kernelgym.coldstart.corpus import ColdstartConfig, build, merge
    from kernelgym.taskgen.splits import parse_families

    if args.merge:
        stats = merge(args.merge, args.out)
        print(json.dumps({k: v for k, v in stats.items() if k not in ("files", "sources")}, indent=2))
        print(f"wrote {args.out}/")
        return 0
    if args.device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError("--device cuda asked for, but torch sees no GPU (use --device cpu)")
    config = ColdstartConfig(n=args.n, out=str(args.out), device=args.device, seed=args.seed,
                             answers_per_task=args.answers_per_task, repair_fraction=args.repair_fraction,
                             heldout_fraction=args.heldout_fraction,
                             heldout_families=parse_families(args.heldout_families), heldout_tasks=args.heldout_tasks,
                             jobs=args.jobs, max_tasks=args.max_tasks,
                             trials=args.trials, max_seconds=args.max_seconds, chunk=args.chunk,
                             warm_pool=not args.no_warm_pool)
    stats = build(config, progress=not args.no_progress)
    keys = ("rows", "rows_by_kind", "rows_by_split", "tasks_attempted", "tasks_answered", "task_coverage",
            "acceptance_rate", "op_coverage", "ops_never_answered", "seconds")
    print(json.dumps({k: stats[k] for k in keys}, indent=2))
    print(f"wrote {args.out}/ (dataset/, train.*, heldout.*, stats.json, judged.jsonl)")
    if stats["interrupted"]:
        print(f"interrupted: the corpus holds what was judged before Ctrl-C ({args.out}/judged.jsonl keeps every "
              "verdict); the same command again resumes it")
        return 130
    return 0
