"""The `kernelgym` command line. User mistakes end with a one-line error and exit code 2, never a traceback."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelgym import interrupt
from kernelgym.interrupt import Interrupted
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult
from kernelgym.tasks.loaders import TASK_SPEC_HELP
from kernelgym.tasks.task import TaskError

# Pipes and CI logs get a wide table instead of rich's 80-column default.
console = Console() if sys.stdout.isatty() else Console(width=160)
err_console = Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, width=160)


class UsageError(Exception):
    """A mistake in what the user asked for; printed without a traceback."""


def main(argv: list[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what the command records (`kernelgym eval`)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        with _ctrl_c():
            return args.func(args)
    except (UsageError, TaskError, ValueError) as e:
        err_console.print(f"[red]error:[/red] {escape(str(e))}")  # the message itself is not markup
        return 2
    except KeyboardInterrupt:
        err_console.print("[yellow]interrupted[/yellow]: the results written before Ctrl-C are kept")
        return 130


@contextlib.contextmanager
def _ctrl_c() -> Iterator[None]:
    """The first Ctrl-C stops the command cleanly (`KeyboardInterrupt`: the judging in flight is killed,
    what was judged is kept); a second one exits at once."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers belong to the main thread (main() called from a test's thread)
        return
    pressed = []

    def on_sigint(signum: int, frame: object) -> None:
        if pressed:
            os.write(2, b"\ninterrupted again: exiting now\n")
            interrupt.kill_children()
            os._exit(130)
        pressed.append(signum)
        os.write(2, b"\nstopping: the judging in flight is dropped, what was judged is kept "
                    b"(Ctrl-C again exits at once)\n")
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kernelgym", description="Judge, train and evaluate LLM-written Triton kernels.")
    sub = p.add_subparsers(dest="command", required=True)

    j = sub.add_parser("judge", help="judge one answer against one task")
    j.add_argument("task", help=f"the task, one of: {TASK_SPEC_HELP} (naming exactly one task)")
    j.add_argument("answer", help="answer file (text with a ```python block, or plain code); '-' reads stdin")
    _add_judge_options(j)
    j.add_argument("--json", action="store_true", help="print the full EvalResult as JSON")
    j.set_defaults(func=_cmd_judge)

    r = sub.add_parser("run", help="judge every built-in answer: a check of the judge on this machine (the main "
                                   "job, GRPO training, is train/grpo.py: README)",
                       description="Judge the built-in answer of every task of --tasks. Each task's reference first "
                                   "runs once in its own memory- and time-limited child (the preflight, a line per "
                                   "task); a task over a limit (or broken) is a row of its own and is not judged. "
                                   "Exit 0 when every answer is ok, 1 when one is not or a task was not judged, 2 on "
                                   "a usage error, 130 after Ctrl-C (what was judged is printed and kept).")
    r.add_argument("--tasks", default="builtin", help=f"task spec (default: builtin): {TASK_SPEC_HELP}")
    r.add_argument("--jobs", type=int, default=None, help="evaluations in parallel (default: CPU count, max 8); "
                                                          "preflight children at once on cpu (one at a time on a GPU)")
    r.add_argument("--json-out", type=Path, default=None, help="also write every EvalResult as JSON lines here")
    r.add_argument("--memory-gb", type=float, default=6.0,
                   help="address-space limit of each task's preflight child on cpu, GB (0: none)")
    r.add_argument("--task-timeout", type=float, default=120.0,
                   help="wall-clock limit of each task's preflight child, s; a task over either limit is not judged "
                        "and the exit code is 1")
    _add_warm_pool_option(r)
    _add_judge_options(r)
    r.set_defaults(func=_cmd_run)

    t = sub.add_parser("tasks", help="task sets")
    tsub = t.add_subparsers(dest="tasks_command", required=True)
    tl = tsub.add_parser("list", help="list the tasks of a spec")
    tl.add_argument("spec", nargs="?", default="builtin", help=f"task spec (default: builtin): {TASK_SPEC_HELP}")
    tl.set_defaults(func=_cmd_tasks_list)
    ta = tsub.add_parser("audit", help="negative controls (zeros, constant, mean, identity, stale) on every task (RH-12)",
                         description="Find tasks an answer that computes nothing passes (RH-12). For every task, "
                                     "in its own memory- and time-limited child, the reference runs on --trials "
                                     "seeds per input distribution (task, signed, wide) and negative controls are "
                                     "compared with its outputs as the judge compares: zeros, the output's mean as "
                                     "a constant, the row mean, an input passed through (identity), another seed's "
                                     "output (stale) and the reference rebuilt under another init seed (reseed). A "
                                     "task a control passes under every distribution is 'degenerate'; a task over a "
                                     "limit or broken is a row of its own (not audited). Exit 0 when every task is "
                                     "sound, 1 otherwise.")
    ta.add_argument("spec", nargs="?", default="builtin", help=f"task spec (default: builtin): {TASK_SPEC_HELP}")
    ta.add_argument("--device", default="cpu", help="cpu (small size, default) or cuda (full size)")
    ta.add_argument("--size", default="auto", choices=["auto", "full", "small"],
                    help="task size: full (the task's own), small (KERNELGYM_SMALL or halved constants), "
                         "auto (full on a GPU, small on cpu)")
    ta.add_argument("--trials", type=int, default=3, help="seeds per input distribution (>= 2)")
    ta.add_argument("--json-out", type=Path, default=None, help="JSONL of every audit, a line as each task finishes")
    ta.add_argument("--resume", action="store_true", help="skip the tasks --json-out already holds")
    ta.add_argument("--retry-limits", action="store_true",
                    help="with --resume, audit again the tasks whose rows hit a limit (oom, timeout, crashed)")
    ta.add_argument("--memory-gb", type=float, default=6.0, help="address-space limit of each task's child (cpu)")
    ta.add_argument("--task-timeout", type=float, default=120.0, help="wall-clock limit of each task's child, s")
    ta.add_argument("--jobs", type=int, default=1, help="tasks audited at once, each in its own child")
    ta.set_defaults(func=_cmd_tasks_audit)
    from kernelgym.taskgen.cli import add_taskgen_parsers

    add_taskgen_parsers(tsub)  # tasks generate, tasks overlap

    rt = sub.add_parser("redteam", help="run every known exploit and every honest answer through the judge")
    rt.add_argument("--only", default=None, help="one threat code (RH-11) or a substring of exploit file names")
    rt.add_argument("--no-legit", action="store_true", help="skip the legitimate corpus (built-in answers)")
    rt.add_argument("--no-exploits", action="store_true", help="run only the legitimate corpus")
    rt.add_argument("--gpu-exploits-only", action="store_true",
                    help="only the exploits marked device: cuda (the rest are covered by a CPU run)")
    rt.add_argument("--jobs", type=int, default=None, help="evaluations in parallel (default: CPU count, max 8)")
    rt.add_argument("--json-out", type=Path, default=None,
                    help="also write every EvalResult as JSON lines here, each with its file's name under 'redteam'")
    rt.add_argument("--shard", default=None, metavar="K/N",
                    help="judge only every N-th answer from the K-th (0-based), e.g. 0/4 .. 3/4 in four processes, "
                         "one per GPU; the report covers that share")
    rt.add_argument("--from-jsonl", nargs="+", type=Path, default=None, metavar="FILE",
                    help="judge nothing: report on the JSON lines of earlier runs (e.g. one --json-out per --shard), "
                         "the same table and failure lines, exit 1 on a miss or a false flag")
    rt.add_argument("--external", action="store_true",
                    help="also judge the real-world honest corpus (tests/redteam/external/: Triton tutorials, "
                         "Liger-Kernel, FlagGems); each must be ok")
    _add_warm_pool_option(rt)
    _add_judge_options(rt)
    rt.set_defaults(func=_cmd_redteam)

    b = sub.add_parser("bench", help="benchmarks whose numbers go to docs/BENCHMARKS.md")
    bsub = b.add_subparsers(dest="bench_command", required=True)
    bj = bsub.add_parser("judge", help="per-phase time per evaluation and speedup spread over repeats")
    bj.add_argument("--tasks", nargs="+", default=["relu", "softmax", "matmul_square"],
                    help="built-in task ids whose built-in answers are judged")
    bj.add_argument("--repeats", type=int, default=10, help="evaluations per task (the speedup spread is over them)")
    bj.add_argument("--json-out", type=Path, default=None, help="also write the report as JSON here")
    bj.add_argument("--jobs", type=int, default=1, help="evaluations in parallel (timing stays serialised)")
    _add_judge_options(bj)
    bj.set_defaults(func=_cmd_bench_judge)
    bs = bsub.add_parser("service", help="the service on a mixed batch vs spawn-per-candidate judging, plus "
                                         "speedup repeatability and agreement with triton.testing.do_bench")
    bs.add_argument("--n", type=int, default=40, help="answers in the mixed batch (50%% correct, 20%% wrong, "
                                                      "15%% compile errors, 10%% crashes, 5%% timeouts)")
    bs.add_argument("--jobs", type=int, default=8, help="evaluations in flight per worker")
    bs.add_argument("--workers-per-device", type=int, default=1,
                    help="worker processes per GPU, each with --jobs in flight (each its own GIL)")
    bs.add_argument("--warm", type=int, default=None, help="warm candidate processes per worker (default: 2 x --jobs: "
                    "each evaluation uses the answer's process and the replay's)")
    bs.add_argument("--no-baseline", action="store_true", help="skip the one-at-a-time spawn-per-candidate mode")
    bs.add_argument("--no-fork-server", action="store_true",
                    help="start each warm candidate process as a new interpreter instead of forking it")
    bs.add_argument("--repeats", type=int, default=10, help="evaluations per answer for the repeatability report")
    bs.add_argument("--repeat-tasks", default="relu,softmax,matmul_square", help="comma-separated built-in tasks")
    bs.add_argument("--corpus", type=Path, default=None,
                    help="the training mix: the same kinds made from a cold-start corpus's generated tasks and "
                         "verified answers (`kernelgym data coldstart`), at the sizes training uses")
    bs.add_argument("--per-task", type=int, default=8, help="with --corpus: answers per task (an RL group)")
    bs.add_argument("--json-out", type=Path, default=None, help="also write the report as JSON here")
    _add_judge_options(bs)
    bs.set_defaults(func=_cmd_bench_service)
    bd = bsub.add_parser("defences", help="what each defence of the judge costs: the service bench's mixed batch "
                                          "with every defence on, then once per defence turned off")
    bd.add_argument("--n", type=int, default=40, help="answers in the mixed batch (the service bench's mix)")
    bd.add_argument("--jobs", type=int, default=8, help="evaluations in flight")
    bd.add_argument("--off", default=None, help="comma-separated defences to turn off one at a time (default: all of "
                                                "static, confinement, precision, profile, replay)")
    bd.add_argument("--json-out", type=Path, default=None, help="also write the report as JSON here")
    _add_judge_options(bd)
    bd.set_defaults(func=_cmd_bench_defences)
    be = bsub.add_parser("env", help="per-step latency of the environment in process vs through its WebSocket "
                                     "server, judging excluded (stub judge)")
    be.add_argument("--steps", type=int, default=300, help="environment steps timed per mode")
    be.add_argument("--sessions", type=int, default=1, help="concurrent clients of the server")
    be.add_argument("--json-out", type=Path, default=None, help="also write the report as JSON here")
    be.set_defaults(func=_cmd_bench_env)
    from kernelgym.generation.bench import build_parser as generate_bench_parser

    bg = bsub.add_parser("generate", parents=[generate_bench_parser(add_help=False)],
                         help="new tokens/s of the transformers decoders (fast: static cache + CUDA graphs; hf: "
                              "model.generate) on a randomly initialised architecture")
    bg.set_defaults(func=_cmd_bench_generate)

    e = sub.add_parser("env", help="the multi-turn environment")
    esub = e.add_subparsers(dest="env_command", required=True)
    es = esub.add_parser("serve", help="serve episodes to RL frameworks over OpenEnv's WebSocket protocol "
                                       "(one session, one episode at a time, per connection)")
    es.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    es.add_argument("--port", type=int, default=8001, help="port to listen on")
    es.add_argument("--tasks", default="builtin", help="task spec served; clients pick tasks by id from it")
    es.add_argument("--max-sessions", type=int, default=64, help="concurrent WebSocket sessions")
    es.add_argument("--jobs", type=int, default=None, help="judge calls in flight (default: CPU count, max 8)")
    es.add_argument("--max-turns", type=int, default=3, help="answers per episode")
    es.add_argument("--stop-on", default="never", choices=["never", "correct", "speedup"], help="end an episode early")
    es.add_argument("--target-speedup", type=float, default=1.0, help="speedup that ends it with --stop-on speedup")
    es.add_argument("--reward", default="drkernel", help="reward function (a key of rewards.REWARDS)")
    es.add_argument("--turn-reward", default="improvement", choices=["improvement", "absolute"],
                    help="improvement: a turn earns what its answer adds over the best earlier one (default); "
                         "absolute: every turn earns its answer's full reward (Dr. Kernel)")
    es.add_argument("--idle-timeout", type=float, default=600.0,
                    help="close a session idle this many seconds with no request in flight (0: never)")
    es.add_argument("--token", default=None,
                    help="require this bearer token on /ws (default: $KERNELGYM_TOKEN; none: no auth)")
    es.add_argument("--service-url", default=None,
                    help="judge through a running `kernelgym serve` at this URL (its GPUs, store and cache) "
                         "instead of in this process; its token: $KERNELGYM_SERVICE_TOKEN")
    _add_judge_options(es)
    es.set_defaults(func=_cmd_env_serve)

    sv = sub.add_parser("serve", help="run the judging service: HTTP API, result store and workers in one process")
    sv.add_argument("--backend", default="local", choices=["local", "ray"],
                    help="local: worker processes on this machine's GPUs (default); ray: actors on a Ray cluster")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    sv.add_argument("--port", type=int, default=8000, help="port to listen on")
    sv.add_argument("--db", type=Path, default=Path("kernelgym.db"), help="SQLite result store (created if missing)")
    sv.add_argument("--token", default=None,
                    help="require this bearer token (default: $KERNELGYM_TOKEN; none: no auth)")
    sv.add_argument("--jobs", type=int, default=None, help="evaluations in flight per worker (backend default)")
    sv.add_argument("--workers-per-device", type=int, default=1,
                    help="local: worker processes per device, each with --jobs in flight (each its own GIL)")
    sv.add_argument("--devices", default=None,
                    help="local: cuda:0,cuda:1 or cpu (default: every GPU, else cpu); ray: auto, gpu, cpu or N")
    sv.add_argument("--max-attempts", type=int, default=3, help="tries per request before a system_error result")
    sv.add_argument("--payload-ttl-days", type=float, default=None,
                    help="drop stored answer text after this many days (results are kept)")
    sv.set_defaults(func=_cmd_serve)
    from kernelgym.export.cli import add_data_parser

    add_data_parser(sub)  # data export
    from kernelgym.coldstart.cli import add_coldstart_parser

    # `data` is built by the exporter's module; the cold-start corpus joins its subcommands
    data = sub.choices["data"]
    add_coldstart_parser(next(a for a in data._actions if isinstance(a, argparse._SubParsersAction)))  # data coldstart
    from kernelgym.eval.cli import add_eval_parser

    add_eval_parser(sub)  # eval
    return p


def _add_warm_pool_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--no-warm-pool", action="store_true",
                   help="on the CPU, start every judge process afresh instead of forking them ahead of time from "
                        "a fork server (torch and triton imported once: ~5x fewer CPU seconds per answer)")


def _warm_pool(args: argparse.Namespace, device: str, jobs: int | None) -> contextlib.AbstractContextManager:
    """The CPU batch commands' warm pool (`batch_pool`: a no-op off the CPU or with --no-warm-pool)."""
    from kernelgym.judge.batch import default_jobs
    from kernelgym.worker.warm_pool import batch_pool

    return batch_pool(device, jobs or default_jobs(), enabled=not args.no_warm_pool)


def _add_judge_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--device", default="auto", help="cpu, cuda, cuda:N or auto (default)")
    p.add_argument("--size", default="auto", choices=["auto", "full", "small"], help="task size (auto: full on GPU)")
    p.add_argument("--trials", type=int, default=5,
                   help="secret correctness trials; a cache probe and a hidden-variant trial (when the task has "
                        "one) run on top, so the table's trials column counts up to this + 2")
    p.add_argument("--timeout", type=float, default=300.0, help="wall-clock limit per answer, seconds")
    p.add_argument("--seed", type=int, default=None, help="master seed (default: a secret one per evaluation)")
    p.add_argument("--reps", type=int, default=50, help="timed calls per measurement, at least")
    p.add_argument("--timing-budget", type=float, default=0.0,
                   help="seconds a measurement keeps timing past --reps (0: exactly --reps calls)")
    p.add_argument("--no-compile-baseline", action="store_true", help="skip timing torch.compile of the reference")
    p.add_argument("--engine", default="replay", choices=["replay", "inprocess"],
                   help="replay (default, judge v4): verdicts from a trusted replay of the answer's recorded kernel "
                        "launches; inprocess: the earlier judge, for comparison")
    p.add_argument("--no-device-transfer", action="store_true",
                   help="replay engine on cuda: bring outputs back through the host output area, never CUDA IPC")


def _config(args: argparse.Namespace) -> JudgeConfig:
    device = args.device
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise UsageError("--device cuda asked for, but torch sees no GPU (use --device cpu)")
    return JudgeConfig(device=device, size=args.size, num_trials=args.trials, timeout_s=args.timeout,
                       seed=args.seed, timing_reps=args.reps, timing_budget_s=args.timing_budget,
                       time_compile_baseline=not args.no_compile_baseline, engine=args.engine,
                       device_transfer=not args.no_device_transfer)


def _one_task(spec: str):  # noqa: ANN202
    from kernelgym.tasks.loaders import resolve_tasks

    tasks = resolve_tasks(spec)
    if len(tasks) != 1:
        raise UsageError(f"task spec {spec!r} names {len(tasks)} tasks; name exactly one")
    return tasks[0]


def _read_answer(path: str) -> bytes:
    if path == "-":
        return sys.stdin.buffer.read()
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read answer file {path}: {e.strerror}") from None


def _cmd_judge(args: argparse.Namespace) -> int:
    from kernelgym.judge.judge import judge

    config = _config(args)
    task = _one_task(args.task)
    result = judge(task, _read_answer(args.answer), config)
    if args.json:
        print(result.to_json(indent=2))
    else:
        _print_results([result])
        if result.error:
            console.print(result.error, markup=False, highlight=False)
    return 0 if result.ok else 1


def _cmd_run(args: argparse.Namespace) -> int:
    from kernelgym.judge.batch import default_jobs, judge_many
    from kernelgym.tasks.limited import ChildLimits
    from kernelgym.tasks.loaders import builtin_answer_path, resolve_tasks
    from kernelgym.tasks.preflight import preflight, preflight_table

    config = _config(args)
    tasks = resolve_tasks(args.tasks)
    pairs, missing = [], []
    for task in tasks:
        path = builtin_answer_path(task.task_id)
        if path.is_file():
            pairs.append((task, path.read_bytes()))
        else:
            missing.append(task.task_id)
    if not pairs:
        raise UsageError(f"no built-in answers for the tasks of {args.tasks!r}")
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    limits = ChildLimits(memory_gb=args.memory_gb, timeout_s=args.task_timeout)
    device = config.resolved_device()
    # References side by side on one GPU would read a neighbour's memory as this task's oom.
    jobs = (args.jobs or default_jobs()) if device == "cpu" else 1
    # Said at once: the preflight alone can take minutes (a bar on a terminal, a line per task in a log).
    console.print(f"preflight of {len(pairs)} task(s) on {device}: each reference runs once in its own child "
                  f"({jobs} at once, {limits.memory_gb:g} GB, {limits.timeout_s:g} s each)")
    log_line = None if err_console.is_terminal else (
        lambda c: console.print(f"  {c.task_id}: {c.label} ({c.seconds:.1f} s)", markup=False, highlight=False))
    checks = preflight([t for t, _ in pairs], config, limits, jobs=jobs, on_check=log_line)
    over = [c for c in checks.values() if not c.ok]
    pairs = [(t, a) for t, a in pairs if checks[t.task_id].ok]
    sink, results = _jsonl_sink(args.json_out), []
    if pairs:
        console.print(f"judging {len(pairs)} built-in answers on {device} ...")
        try:
            with _warm_pool(args, device, args.jobs):
                results = judge_many(pairs, config, jobs=args.jobs, on_result=sink)
        except Interrupted as e:
            done = [r for r in e.done if r is not None]
            _print_results(done)
            console.print(f"interrupted: {len(done)} of {len(pairs)} answers judged"
                          + (f", each in {args.json_out}" if args.json_out else ""))
            return 130
        _print_results(results)
    if over:
        console.print(preflight_table(over, title="Tasks not judged (preflight)"))
    bad = [r for r in results if not r.ok]
    console.print(f"{len(results) - len(bad)}/{len(results)} ok"
                  + (f"; {len(over)} task(s) not judged (preflight)" if over else "")
                  + (f"; no answer for: {', '.join(missing)}" if missing else ""))
    return 0 if not bad and not over else 1


def _jsonl_sink(path: Path | None):  # noqa: ANN202
    """A callback appending each result to `path` as it arrives (nothing lost if interrupted)."""
    if path is None:
        return None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")

    def sink(r: EvalResult, **extra: str) -> None:
        line = r.to_json() if not extra else json.dumps({**json.loads(r.to_json()), **extra})
        with path.open("a") as fh:
            fh.write(line + "\n")

    return sink


def _shard(text: str | None) -> tuple[int, int] | None:
    if text is None:
        return None
    k, sep, n = text.partition("/")
    if not (sep and k.strip().isdigit() and n.strip().isdigit() and int(k) < int(n)):
        raise UsageError(f"--shard takes K/N with 0 <= K < N (e.g. 0/4), not {text!r}")
    return int(k), int(n)


def _redteam_from_jsonl(paths: list[Path]) -> int:
    from kernelgym.redteam.runner import describe_failures, report_from_rows, report_table

    rows = []
    for path in paths:
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            raise UsageError(f"cannot read {path}: {e.strerror or e}") from None
        for n, line in enumerate(lines, 1):
            try:
                row = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                raise UsageError(f"{path}:{n}: not a JSON line") from None
            if row is not None and "redteam" not in row:
                raise UsageError(f"{path}:{n}: no 'redteam' name (written by `kernelgym redteam --json-out`?)")
            if row is not None:
                rows.append(row)
    try:
        report, unknown = report_from_rows(rows)
    except (KeyError, TypeError, ValueError) as e:
        raise UsageError(f"a row is not an EvalResult: {e}") from None
    if not report.outcomes and not report.legit:
        raise UsageError("no red-team rows in " + ", ".join(map(str, paths)))
    console.print(report_table(report))
    for name in unknown:
        console.print(f"not in the corpus any more: {name}", markup=False, highlight=False)
    for line in describe_failures(report):
        console.print(line, markup=False, highlight=False)
    return 0 if report.ok else 1


def _cmd_redteam(args: argparse.Namespace) -> int:
    from kernelgym.redteam.runner import describe_failures, report_table, run_redteam

    if args.from_jsonl:
        return _redteam_from_jsonl(args.from_jsonl)
    config = _config(args)
    if args.no_legit and args.no_exploits:
        raise UsageError("--no-legit and --no-exploits together leave nothing to run")
    exploits = None
    if args.no_exploits:
        exploits = []
    elif args.gpu_exploits_only:
        from kernelgym.redteam.corpus import load_corpus

        exploits = [e for e in load_corpus() if e.device == "cuda"]
    sink = _jsonl_sink(args.json_out)
    with _warm_pool(args, config.resolved_device(), args.jobs):
        report = run_redteam(config, jobs=args.jobs, only=args.only, legit=not args.no_legit, exploits=exploits,
                             on_result=None if sink is None else (lambda name, r: sink(r, redteam=name)),
                             external=args.external, shard=_shard(args.shard))
    if not report.outcomes and not report.legit:
        raise UsageError(f"no exploit matches {args.only!r}")
    console.print(report_table(report))
    for e in report.skipped:
        console.print(f"skipped on {report.device}: {e.name} ({e.threat}) needs {e.device}")
    for line in describe_failures(report):
        console.print(line, markup=False, highlight=False)
    return 0 if report.ok else 1


def _cmd_tasks_list(args: argparse.Namespace) -> int:
    from kernelgym.tasks.loaders import resolve_tasks

    table = Table("task", "level", "origin")
    for t in resolve_tasks(args.spec):
        table.add_row(t.task_id, "" if t.level is None else str(t.level), t.origin)
    console.print(table)
    return 0


def _cmd_tasks_audit(args: argparse.Namespace) -> int:
    from kernelgym.tasks.audit import UNAUDITED, AuditLog, audit_table, audit_tasks
    from kernelgym.tasks.limited import ChildLimits
    from kernelgym.tasks.loaders import resolve_tasks

    if args.trials < 2:
        raise UsageError("--trials must be at least 2 (the stale control compares two seeds)")
    if args.resume and not args.json_out:
        raise UsageError("--resume needs --json-out (the file to resume from)")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    tasks = resolve_tasks(args.spec)
    if not tasks:
        raise UsageError(f"task spec {args.spec!r} names no tasks")
    log = AuditLog(args.json_out) if args.json_out else None
    if args.retry_limits and not args.resume:
        raise UsageError("--retry-limits goes with --resume")
    done = log.done() if log and args.resume else {}
    if args.retry_limits:
        retry = {k for k, a in done.items() if a.verdict in UNAUDITED}
        log.drop(retry)
        done = {k: a for k, a in done.items() if k not in retry}
    if log and not args.resume:
        log.start()
    todo = [t for t in tasks if t.task_id not in done]
    if done:
        console.print(f"resuming: {len(tasks) - len(todo)} of {len(tasks)} tasks already audited in {args.json_out}")
    limits = ChildLimits(memory_gb=args.memory_gb, timeout_s=args.task_timeout)
    new = audit_tasks(todo, JudgeConfig(device=args.device, size=args.size), trials=args.trials, limits=limits,
                      on_audit=log.append if log else None, jobs=args.jobs)
    by_id = {**done, **{a.task_id: a for a in new}}
    audits = [by_id[t.task_id] for t in tasks]
    console.print(audit_table(audits))
    bad = [a for a in audits if a.verdict == "degenerate" or a.verdict in UNAUDITED]
    return 1 if bad else 0


def _cmd_bench_service(args: argparse.Namespace) -> int:
    from kernelgym.service.bench import run_service_bench

    if (args.n < 1 or args.jobs < 1 or args.workers_per_device < 1 or (args.warm is not None and args.warm < 0)
            or args.repeats < 0):
        raise UsageError("--n, --jobs and --workers-per-device must be at least 1, --warm and --repeats at least 0")
    tasks = tuple(t.strip() for t in args.repeat_tasks.split(",") if t.strip()) if args.repeats else ()
    items = None
    if args.corpus is not None:
        from kernelgym.service.bench_mix import build_training_mix

        items = build_training_mix(args.n, args.corpus, per_task=args.per_task)
    report = run_service_bench(args.n, _config(args), jobs=args.jobs, warm=args.warm, baseline=not args.no_baseline,
                               repeats=args.repeats, repeat_tasks=tasks, fork_server=not args.no_fork_server,
                               items=items, workers_per_device=args.workers_per_device)
    for table in report.tables():
        console.print(table)
    for mode in report.modes:
        for line in mode.unexpected:
            console.print(f"[yellow]unexpected[/yellow] ({mode.mode.split()[0]}): {escape(line)}")
    if args.json_out:
        args.json_out.write_text(json.dumps(report.to_dict(), indent=2))
    return 0


def _cmd_bench_defences(args: argparse.Namespace) -> int:
    from kernelgym.service.bench_defences import DEFENCES, run_defence_bench

    if args.n < 1 or args.jobs < 1:
        raise UsageError("--n and --jobs must be at least 1")
    off = None if args.off is None else [x.strip() for x in args.off.split(",") if x.strip()]
    unknown = [x for x in off or [] if x not in DEFENCES]
    if unknown:
        raise UsageError(f"--off: unknown defence(s) {', '.join(unknown)}; known: {', '.join(DEFENCES)}")
    report = run_defence_bench(args.n, _config(args), jobs=args.jobs, off=off)
    console.print(report.table())
    for row in report.rows[1:]:
        for line in row.changed:
            console.print(f"[yellow]changed[/yellow] with {row.off} off: {escape(line)}")
    if args.json_out:
        args.json_out.write_text(json.dumps(report.to_dict(), indent=2))
    return 0


def _cmd_bench_judge(args: argparse.Namespace) -> int:
    from kernelgym.judge.bench import run_judge_bench

    report = run_judge_bench(args.tasks, args.repeats, _config(args), jobs=args.jobs)
    console.print(report.table())
    if args.json_out:
        args.json_out.write_text(json.dumps(report.to_dict(), indent=2))
    return 0


def _require_openenv(what: str) -> None:
    import importlib.util

    if importlib.util.find_spec("openenv") is None:
        raise UsageError(f"{what} needs openenv: pip install 'openenv>=0.10,<0.11' (the openenv extra)")


def _cmd_bench_generate(args: argparse.Namespace) -> int:
    from kernelgym.generation.bench import main_args

    return main_args(args)


def _cmd_bench_env(args: argparse.Namespace) -> int:
    _require_openenv("bench env")
    from kernelgym.env.bench import run_env_bench

    report = run_env_bench(args.steps, args.sessions)
    console.print(report.table())
    if args.json_out:
        args.json_out.write_text(json.dumps(report.to_dict(), indent=2))
    return 0


def _cmd_env_serve(args: argparse.Namespace) -> int:
    _require_openenv("env serve")
    from kernelgym.env.environment import EnvConfig
    from kernelgym.env.server import create_server_app, serve
    from rewards.config import RewardConfig

    if args.max_sessions < 1 or (args.jobs is not None and args.jobs < 1):
        raise UsageError("--max-sessions and --jobs must be at least 1")
    if args.idle_timeout < 0:
        raise UsageError("--idle-timeout must be >= 0 (0: never)")
    env_config = EnvConfig(max_turns=args.max_turns, stop_on=args.stop_on, target_speedup=args.target_speedup,
                           turn_reward=args.turn_reward)
    judge_fn = None
    if args.service_url:
        import os

        from kernelgym.service.client import service_judge_fn

        judge_fn = service_judge_fn(args.service_url, token=os.environ.get("KERNELGYM_SERVICE_TOKEN"))
    app = create_server_app(_config(args), RewardConfig(name=args.reward), env_config, tasks=args.tasks,
                            max_sessions=args.max_sessions, jobs=args.jobs, token=args.token, judge_fn=judge_fn,
                            idle_timeout_s=args.idle_timeout or None)
    context = app.state.kernelgym
    logging.getLogger("kernelgym").setLevel(logging.INFO)
    console.print(f"serving {len(context.tasks)} task(s) on ws://{args.host}:{args.port}/ws "
                  f"({args.max_sessions} sessions, {context.jobs} judge calls at once, "
                  f"device {context.judge_config.device}, turn reward {env_config.turn_reward})")
    serve(app, host=args.host, port=args.port)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    try:
        from kernelgym.service.server import serve
    except ImportError as e:
        raise UsageError(f"the service needs the [serve] extra (pip install 'kernelgym[serve]'): {e}") from None
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.workers_per_device < 1:
        raise UsageError("--workers-per-device must be at least 1")
    if args.workers_per_device > 1 and args.backend != "local":
        raise UsageError("--workers-per-device is an option of the local backend (ray: one actor per GPU)")
    if args.max_attempts < 1:
        raise UsageError("--max-attempts must be at least 1")
    logging.getLogger("kernelgym").setLevel(logging.INFO)
    from kernelgym.service.server import ServiceStartError

    try:
        serve(backend=args.backend, host=args.host, port=args.port, db=args.db, token=args.token, jobs=args.jobs,
              devices=args.devices, max_attempts=args.max_attempts, payload_ttl_days=args.payload_ttl_days,
              workers_per_device=args.workers_per_device)
    except ServiceStartError as e:
        raise UsageError(str(e)) from None
    return 0


def _fmt(x: float | None, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def _print_results(results: list[EvalResult]) -> None:
    table = Table("task", "status", "trials", "max abs err", "eager ms", "answer ms", "vs eager", "vs compile",
                  "triton share", "seconds",
                  caption="trials: passed/run, the --trials secret trials plus the cache probe and a hidden variant")
    for r in results:
        passed = sum(t.passed for t in r.trials)
        errs = [t.max_abs_error for t in r.trials if t.max_abs_error is not None]
        colour = "green" if r.ok else "red"
        table.add_row(
            r.task_id, f"[{colour}]{r.status.value}[/{colour}]", f"{passed}/{len(r.trials)}",
            _fmt(max(errs) if errs else None, ".1e"),
            _fmt(r.reference_runtime.median_ms if r.reference_runtime else None, ".3f"),
            _fmt(r.runtime.median_ms if r.runtime else None, ".3f"),
            _fmt(r.speedup_eager, ".2f"), _fmt(r.speedup_compile, ".2f"),
            _fmt(r.profile.triton_share if r.profile else None, ".0%"),
            f"{r.wall_seconds:.1f}",
        )
    console.print(table)
    for r in results:
        if not r.ok:
            console.print(f"[red]{r.task_id}[/red]: {r.message}", markup=True, highlight=False)


if __name__ == "__main__":
    sys.exit(main())
