"""Judge every legitimate answer (built-in, honest-but-unusual, external real-world) on one device
and engine, writing one JSON line per answer as it finishes (name, status, message, speedup,
seconds). Used by launch/judge_v4_check.sh (stage `corpora`) for docs/BENCHMARKS.md.

Usage: python launch/judge_v4_corpora.py OUT.jsonl [--engine replay] [--device cuda] [--jobs 12]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import time
from pathlib import Path

from kernelgym.judge import JudgeConfig, judge
from kernelgym.redteam.corpus import load_external, load_honest
from kernelgym.tasks import builtin_task_ids, load_builtin


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--engine", default="replay")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--jobs", type=int, default=12)
    ap.add_argument("--only", default="", help="comma-separated kinds: builtin,honest,external (default: all)")
    args = ap.parse_args()
    kinds = set(filter(None, args.only.split(","))) or {"builtin", "honest", "external"}
    items = []
    if "external" in kinds:
        items += [(f"external:{a.name}", a.task, a.text) for a in load_external()
                  if args.device != "cpu" or a.runs_on_cpu]
    if "honest" in kinds:
        items += [(f"honest:{a.name}", a.task, a.text) for a in load_honest()]
    if "builtin" in kinds:
        items += [(f"builtin:{t}", t, Path(f"data/answers/{t}.py").read_text()) for t in builtin_task_ids()
                  if Path(f"data/answers/{t}.py").exists()]
    config = JudgeConfig(device=args.device, engine=args.engine, time_compile_baseline=False, timeout_s=120)
    tasks = {t: load_builtin(t)[0] for t in {i[1] for i in items}}
    args.out.write_text("")

    def one(item):  # noqa: ANN001, ANN202
        t0 = time.perf_counter()
        r = judge(tasks[item[1]], item[2], config)
        return item[0], r, time.perf_counter() - t0

    with cf.ThreadPoolExecutor(args.jobs) as ex:
        for fut in cf.as_completed([ex.submit(one, i) for i in items]):
            name, r, secs = fut.result()
            line = {"name": name, "status": r.status.value, "message": r.message[:300], "engine": r.engine,
                    "speedup_eager": r.speedup_eager, "triton_share": r.profile.triton_share if r.profile else None,
                    "seconds": round(secs, 2), "confinement": r.confinement}
            with args.out.open("a") as fh:
                fh.write(json.dumps(line) + "\n")
            print(f"{r.status.value:15s} {name:55s} {r.message[:120]}", flush=True)


if __name__ == "__main__":
    main()
