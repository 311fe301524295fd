"""`kernelgym eval`: generate answers with a checkpoint or an endpoint, judge them, write the report.

`kernelgym.cli` registers this command with `add_eval_parser(subparsers)`.
"""

from __future__ import annotations

import argparse
import json
import re
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelgym.eval.judging import JudgeUnavailable, embedded_judge, remote_judge
from kernelgym.eval.metrics import FAST_P, evaluate
from kernelgym.eval.provenance import command_line, git_commit, model_provenance
from kernelgym.eval.report import write_report
from kernelgym.eval.runner import EvalConfig, EvalError, RunFiles, read_screen, run_eval, screen_tasks
from kernelgym.generation.backends import BACKENDS
from kernelgym.generation.base import GenerationError, Generator
from kernelgym.generation.models import DTYPES, parse_model_spec
from kernelgym.tasks.loaders import TASK_SPEC_HELP
from kernelgym.tasks.preflight import TaskCheck, preflight_table

console = Console() if sys.stdout.isatty() else Console(width=160)
err_console = Console(stderr=True)


def add_eval_parser(subparsers: argparse._SubParsersAction) -> None:
    """Add `eval` (and its options) to the `kernelgym` command's subparsers."""
    e = subparsers.add_parser("eval", help="evaluate a checkpoint or an endpoint on KernelBench-style tasks: "
                                           "generate, judge, report (resumable)")
    g = e.add_argument_group("model")
    g.add_argument("--model", help="hub id, local directory, LoRA adapter directory, gguf:FILE, or the model name "
                                   "an --api-base endpoint serves")
    g.add_argument("--model-note", default="", help="what is known of the model's origin (e.g. 'SFT of the de-quantised "
                                                    "Qwen GGUF'), stored in run.json and the report beside its numbers")
    g.add_argument("--api-base", default=None, help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    g.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the endpoint's key")
    g.add_argument("--backend", default="auto", choices=BACKENDS,
                   help="auto: the endpoint if --api-base, else vllm if installed, else transformers")
    g.add_argument("--dtype", default="auto", choices=DTYPES, help="local models: weights dtype (auto: bf16 on GPU)")
    g.add_argument("--concurrency", type=int, default=8, help="endpoint requests in flight")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.5, help="vLLM's share of the GPU")
    t = e.add_argument_group("tasks and sampling")
    t.add_argument("--tasks", help=f"task spec: {TASK_SPEC_HELP}")
    t.add_argument("--limit", type=int, default=None, help="only the first N tasks of the spec")
    t.add_argument("--samples", "-k", type=int, default=1, help="answers per task (the k of pass@k)")
    t.add_argument("--turns", type=int, default=1, help="turns per sample, with the judge's feedback in between")
    t.add_argument("--context-turns", type=int, default=None,
                   help="previous turns kept in the prompt (the latest plus the best others); default: all")
    t.add_argument("--max-new-tokens", type=int, default=4096, help="tokens per answer (default 4096)")
    t.add_argument("--temperature", type=float, default=None, help="default: 0 (greedy) for 1 sample, else 0.7")
    t.add_argument("--seed", type=int, default=0, help="generation seed")
    t.add_argument("--gen-batch", type=int, default=32, help="sequences per generate call")
    t.add_argument("--stop-on", default="never", choices=["never", "correct", "speedup"],
                   help="end a trajectory early")
    j = e.add_argument_group("judging")
    j.add_argument("--service-url", default=None, help="a running `kernelgym serve` (default: an embedded service)")
    j.add_argument("--judge-devices", default=None, help="embedded service: cuda:0,cuda:1 or cpu (default: every GPU, "
                                                          "else cpu)")
    j.add_argument("--judge-jobs", type=int, default=None, help="evaluations in flight per judge worker")
    j.add_argument("--trials", type=int, default=5, help="correctness trials per answer")
    j.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit per answer, seconds")
    j.add_argument("--size", default="auto", choices=["auto", "full", "small"], help="task size (auto: full on GPU)")
    j.add_argument("--reps", type=int, default=50, help="timed calls per measurement")
    j.add_argument("--no-compile-baseline", action="store_true", help="do not time torch.compile of the reference")
    j.add_argument("--no-audit", action="store_true",
                   help="skip the degenerate-task audit (each task's reference still runs first in a limited child)")
    j.add_argument("--memory-gb", type=float, default=6.0,
                   help="address-space limit of each task's audit (or preflight) child on cpu, GB (0: none)")
    j.add_argument("--task-timeout", type=float, default=120.0,
                   help="wall-clock limit of each task's audit (or preflight) child, s; a task over either limit is "
                        "a row of the report, not judged")
    j.add_argument("--screen-jobs", type=int, default=None,
                   help="tasks audited (or preflighted) at once, each in its own child (default: half the CPU cores, "
                        "at most 8: one child takes ~5-9 s to start and run a reference on an H200, so 100 tasks "
                        "one at a time took 15 minutes)")
    j.add_argument("--keep-degenerate", action="store_true",
                   help="count the tasks the audit flags in the headline metrics (default: flagged and left out)")
    o = e.add_argument_group("output")
    o.add_argument("--out", type=Path, default=None, help="run directory (default: runs/eval/<model>); an existing "
                                                           "one is resumed")
    o.add_argument("--report-only", action="store_true", help="rewrite the report of --out from its JSONL; no model")
    o.add_argument("--rejudge", type=Path, default=None, metavar="RUN",
                   help="judge the answers stored in RUN/generations.jsonl again, with RUN's tasks and judge settings "
                        "and this checkout's judge, into --out (no model; --tasks overrides RUN's task spec)")
    o.add_argument("--compare", type=Path, nargs=2, default=None, metavar=("RUN_A", "RUN_B"),
                   help="no model: B against A, paired on the tasks both runs judged (compiled, correct, fast_1: "
                        "the difference with a 95 %% interval over tasks and a sign test), as a markdown table")
    o.add_argument("--no-progress", action="store_true", help="no progress bars")
    e.set_defaults(func=eval_command)


def eval_command(args: argparse.Namespace) -> int:
    """Handler of `kernelgym eval`: 0 when the run finished (whatever the answers scored), 2 on an error."""
    if getattr(args, "screen_jobs", 1) is None:  # every path screens (a re-judged run too)
        args.screen_jobs = min(8, max(1, (os.cpu_count() or 2) // 2))
    try:
        if args.compare is not None:
            return _compare(args.compare)
        if args.report_only:
            return _report_only(args)
        if args.rejudge is not None:
            return _rejudge(args)
        return _run(args)
    except (GenerationError, JudgeUnavailable) as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}")
        return 2


def _run(args: argparse.Namespace) -> int:
    from kernelgym.generation.backends import pick_backend

    if not args.model or not args.tasks:
        raise EvalError("kernelgym eval needs --model and --tasks (or --report-only --out DIR)")
    if args.screen_jobs < 1:
        raise EvalError("--screen-jobs must be at least 1")
    backend = pick_backend(args.model, args.backend, args.api_base)
    tasks = _load_tasks(args.tasks, args.limit)
    temperature = args.temperature if args.temperature is not None else (0.0 if args.samples == 1 else 0.7)
    judge = {"num_trials": args.trials, "timeout_s": args.timeout, "size": args.size, "timing_reps": args.reps,
             "time_compile_baseline": not args.no_compile_baseline}
    config = EvalConfig(model=args.model, samples=args.samples, turns=args.turns, context_turns=args.context_turns,
                        max_new_tokens=args.max_new_tokens, temperature=temperature, seed=args.seed,
                        gen_batch=args.gen_batch, stop_on=args.stop_on, judge=judge)
    out = args.out or Path("runs/eval") / re.sub(r"[^A-Za-z0-9._-]+", "_", args.model.removeprefix("gguf:"))[-80:]
    make = _generator_factory(args, backend)
    info = {"tasks_spec": args.tasks, "generator": {"backend": backend, "model": args.model},
            "model_provenance": model_provenance(args.model, backend, args.api_base, args.model_note)}
    return _execute(args, tasks, config, out, make, info)


def _execute(args: argparse.Namespace, tasks: list, config: EvalConfig, out: Path, make: Callable[[], Generator],
             info: dict[str, Any]) -> int:
    """Screen the tasks, generate what is missing, judge, write the report (`_run` and `_rejudge`)."""
    from kernelgym.judge.config import JudgeConfig
    from kernelgym.tasks.limited import ChildLimits

    judge = config.judge
    devices = tuple(d.strip() for d in args.judge_devices.split(",") if d.strip()) if args.judge_devices else ()
    files = RunFiles(out)
    if args.service_url:
        with remote_judge(args.service_url):  # reachable, and takes our token
            pass
    # Before any answer: the audit (or, with --no-audit, the preflight) runs each task's reference
    # in a limited child, so a task over the limits is a row, never the judge's death.
    screen_config = JudgeConfig.from_dict({**judge, "device": _audit_device(devices)})
    limits = ChildLimits(memory_gb=args.memory_gb, timeout_s=args.task_timeout)
    screen = screen_tasks(tasks, files, screen_config, audit=not args.no_audit, progress=not args.no_progress,
                          limits=limits, jobs=args.screen_jobs)

    def open_judge() -> Any:
        if args.service_url:
            return remote_judge(args.service_url)
        return embedded_judge(files.store, devices, args.judge_jobs)

    info = {**info, "judge": {"service": args.service_url or "embedded", "devices": ",".join(devices) or "auto",
                              "trials": judge.get("num_trials"), "size": judge.get("size")}, "audited": not args.no_audit,
            "keep_degenerate": args.keep_degenerate,
            "invocation": {"command": command_line(getattr(args, "argv", sys.argv[1:])), **git_commit(),
                           "at": time.strftime("%Y-%m-%d %H:%M:%S")}}
    console.print(f"eval of {info['generator']['model']} ({info['generator']['backend']}) on {len(tasks)} task(s), "
                  f"{config.samples} sample(s) x {config.turns} turn(s) -> {out}")
    metrics = run_eval(tasks, config, out, make, open_judge, info=info, screen=screen,
                       progress=not args.no_progress, keep_degenerate=args.keep_degenerate)
    report = _write(files, metrics)
    _print_summary(metrics)
    console.print(f"report: {report}")
    return 0


def _rejudge(args: argparse.Namespace) -> int:
    """`--rejudge RUN`: the answers RUN stored, judged again into --out; no model is loaded."""
    source = args.rejudge
    if not (source / "run.json").is_file() or not (source / "generations.jsonl").is_file():
        raise EvalError(f"--rejudge needs an eval run directory holding run.json and generations.jsonl; {source} "
                        "does not")
    if args.out is None or args.out.resolve() == source.resolve():
        raise EvalError("--rejudge needs --out, a directory other than RUN (RUN's verdicts stay as they are)")
    if args.model or args.api_base:
        raise EvalError("--rejudge judges stored answers: it takes no --model or --api-base")
    before = json.loads((source / "run.json").read_text())
    config = EvalConfig(**before["config"])
    spec = args.tasks or before["tasks_spec"]
    by_id = {t.task_id: t for t in _load_tasks(spec, None)}
    missing = [t for t in before["tasks"] if t not in by_id]
    if missing:
        raise EvalError(f"{spec} lacks {len(missing)} task(s) of {source} ({', '.join(missing[:3])}, ...): pass "
                        "--tasks with a spec that holds them")
    args.out.mkdir(parents=True, exist_ok=True)
    if not (args.out / "generations.jsonl").is_file():
        shutil.copyfile(source / "generations.jsonl", args.out / "generations.jsonl")

    def no_model() -> Generator:
        raise EvalError(f"an answer this re-judging needs is not in {source}/generations.jsonl (the run was cut "
                        "short, or a verdict changed where the run stops early): --rejudge judges stored answers only")

    info = {"tasks_spec": spec, "generator": {**before.get("generator", {}), "rejudged_from": str(source)},
            "model_provenance": before.get("model_provenance") or {"note": "not recorded by the original run"},
            "original_invocations": before.get("invocations", [])}
    return _execute(args, [by_id[t] for t in before["tasks"]], config, args.out, no_model, info)


def _generator_factory(args: argparse.Namespace, backend: str) -> Callable[[], Generator]:
    """What builds the generator. An endpoint is built (and checked) now, so a wrong URL or key
    fails before the audit; a local model loads only once an answer is missing, but a model path
    that is not there fails now."""
    from kernelgym.generation.backends import make_generator

    def make() -> Generator:
        return make_generator(args.model, backend=backend, api_base=args.api_base, api_key_env=args.api_key_env,
                              dtype=args.dtype, batch_size=args.gen_batch, concurrency=args.concurrency,
                              gpu_memory_utilization=args.gpu_memory_utilization, seed=args.seed)

    if backend != "openai":
        parse_model_spec(args.model)
        return make
    endpoint = make()
    return lambda: endpoint


def _report_only(args: argparse.Namespace) -> int:
    if args.out is None or not (args.out / "run.json").is_file():
        raise EvalError("--report-only needs --out naming an eval run directory (with run.json)")
    files = RunFiles(args.out)
    info = json.loads(files.info.read_text())
    attempts = sorted(files.attempts.read().values(), key=lambda a: a.key)
    screen = read_screen(files, info["tasks"], audited=info.get("audited", True))
    keep = args.keep_degenerate or info.get("keep_degenerate", False)
    metrics = evaluate(attempts, info["config"]["turns"], info["config"]["samples"], screen.degenerate, keep,
                       screen.over_limits)
    files.metrics.write_text(json.dumps(metrics, indent=2))
    console.print(f"report: {_write(files, metrics)}")
    return 0


def _compare(runs: list[Path]) -> int:
    """`--compare A B`: the paired table on stdout."""
    from kernelgym.eval.paired import markdown, paired

    attempts = []
    for run in runs:
        files = RunFiles(run)
        if not files.attempts.path.is_file():
            raise EvalError(f"--compare needs eval run directories holding results.jsonl; {run} has none")
        attempts.append(list(files.attempts.read().values()))
    rows = paired(*attempts)
    if not rows:
        raise EvalError(f"--compare: {runs[0]} and {runs[1]} judged no task in common")
    print(markdown(rows, runs[0].name, runs[1].name))
    return 0


def _write(files: RunFiles, metrics: dict[str, Any]) -> Path:
    info = json.loads(files.info.read_text())
    return write_report(files.root, metrics, info, sorted(files.attempts.read().values(), key=lambda a: a.key))


def _load_tasks(spec: str, limit: int | None) -> list:
    """Tasks of the spec, with a clear error for a KernelBench path or hub dataset that is not there."""
    from kernelgym.tasks.loaders import resolve_tasks

    for part in (p.strip() for p in spec.split(",")):
        if part.startswith("kernelbench:"):
            path = Path(re.sub(r":level\d+$", "", part[len("kernelbench:"):])).expanduser()
            if not path.is_dir():
                raise EvalError(f"no KernelBench checkout at {path}: clone github.com/ScalingIntelligence/KernelBench "
                                "and pass kernelbench:/path/to/KernelBench[:levelN]")
    try:
        tasks = resolve_tasks(spec)
    except (ConnectionError, OSError) as e:  # the hub dataset without network access
        raise EvalError(f"cannot load tasks {spec!r}: {e}. Without network access, save the dataset with "
                        "datasets' save_to_disk and pass hf:/that/directory") from None
    if limit is not None:
        if limit < 1:
            raise EvalError("--limit must be at least 1")
        tasks = tasks[:limit]
    return tasks


def _audit_device(devices: tuple[str, ...]) -> str:
    """The audit runs references (in a limited child per task) on the judge's first GPU, else the CPU."""
    if devices:
        return devices[0]
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _print_summary(metrics: dict[str, Any]) -> None:
    table = Table("group", "tasks", "answers", "compiled", "correct", *(f"fast_{p:g}" for p in FAST_P),
                  "geomean", f"pass@{metrics['pass_k'][-1]}", title="best of turns")
    for name, s in {**metrics["levels"], "overall": metrics["overall"]}.items():
        table.add_row(name, str(s["tasks"]), str(s["attempts"]), _pct(s["compile_rate"]), _pct(s["correct_rate"]),
                      *(_pct(s["fast_p"]["eager"][f"{p:g}"]) for p in FAST_P),
                      "n/a" if s["geomean_speedup"]["eager"] is None else f"{s['geomean_speedup']['eager']:.2f}x",
                      _pct(s["pass_at_k"][str(metrics["pass_k"][-1])]))
    console.print(table)
    checks = [TaskCheck.from_dict(c) for c in metrics.get("over_limits", [])]
    if checks:
        console.print(preflight_table(checks, title="Tasks not judged (in no number above)"))


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"
