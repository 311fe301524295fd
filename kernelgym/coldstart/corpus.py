"""The cold-start corpus: generated tasks, answers written by construction, kept only when the judge says `ok`.

    tasks (taskgen's composer, or a generated set)  ->  answers (`answer.write_answer`, a drawn style each)
      ->  judge (interpreter at the small size on cpu; full size on cuda)  ->  single-turn rows
      ->  corrupted copies of verified answers, judged again  ->  repair rows (broken answer, real feedback, fix)

Every verdict is appended to `judged.jsonl` in the output directory as it arrives, so an
interrupted run loses nothing and a second run with the same arguments judges only what is
missing. The rows are chat messages exactly as the environment renders them (`env.prompts`,
`env.feedback`), in TRL's prompt-completion format, so `train/sft.py` trains on them directly.
"""

from __future__ import annotations

import json
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kernelgym.coldstart.answer import supported, write_answer
from kernelgym.coldstart.program import Style, UnsupportedOp
from kernelgym.coldstart.repair import corrupt
from kernelgym.interrupt import Interrupted
from kernelgym.taskgen.compose import Candidate, compose, estimate_within
from kernelgym.taskgen.fingerprint import code_hash
from kernelgym.taskgen.ops import OPS
from kernelgym.taskgen.splits import HELDOUT, HELDOUT_FAMILY, split_of

SINGLE, REPAIR = "single", "repair"


@dataclass
class ColdstartConfig:
    """One corpus build."""

    n: int = field(default=1000, metadata={"help": "verified single-turn answers wanted"})
    out: str = field(default="runs/coldstart", metadata={"help": "output directory"})
    device: str = field(default="cpu", metadata={"help": "cpu (interpreter, small size) or cuda (full size)"})
    seed: int = field(default=0, metadata={"help": "task generator seed (the same tasks as `tasks generate --seed`)"})
    answers_per_task: int = field(default=1, metadata={"help": "answers in different styles per task"})
    repair_fraction: float = field(default=0.25, metadata={"help": "repair examples per verified answer"})
    heldout_fraction: float = field(default=0.1, metadata={"help": "share of op-chain signatures held out"})
    heldout_families: tuple[str, ...] = field(default=(), metadata={
        "help": "op families held out whole (`tasks generate --heldout-families`): their chains are the "
                "heldout_family split, so no training answer holds a kernel of theirs"})
    heldout_tasks: int = field(default=0, metadata={"help": "write at least this many held-out tasks to tasks/ for "
                                                    "evaluation, composing more (never judged) when the corpus's "
                                                    "own are fewer"})
    jobs: int = field(default=0, metadata={"help": "concurrent judge processes (0: one per core, at most 8)"})
    max_tasks: int = field(default=0, metadata={"help": "give up after this many generated tasks (0: 4 * n)"})
    trials: int = field(default=0, metadata={"help": "correctness trials per answer (0: the judge's default)"})
    chunk: int = field(default=64, metadata={"help": "answers judged per batch (progress is saved after each)"})
    warm_pool: bool = field(default=True, metadata={"help": "on the CPU, judge with processes forked ahead of "
                                                     "time from a fork server (kernelgym.worker.warm_pool.batch_pool)"})
    max_seconds: float = field(default=0.0, metadata={"help": "stop judging new answers after this long, keep what "
                                                      "passed (0: never); repairs get a quarter of it on top"})

    def __post_init__(self) -> None:
        if (self.n < 1 or self.answers_per_task < 1 or self.jobs < 0 or self.max_tasks < 0 or self.trials < 0
                or self.heldout_tasks < 0):
            raise ValueError("coldstart needs n >= 1, answers_per_task >= 1 and jobs, max_tasks, trials >= 0")
        if not 0 <= self.repair_fraction <= 1:
            raise ValueError(f"repair_fraction must be in [0, 1], not {self.repair_fraction}")
        if self.device not in ("cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device must be cpu or cuda, not {self.device!r}")
        if self.chunk < 1 or self.max_seconds < 0:
            raise ValueError("chunk must be >= 1 and max_seconds >= 0")
        self.heldout_families = tuple(sorted(self.heldout_families))
        self.split("")  # validates the fraction and the families

    def split(self, signature: str) -> str:
        """The split of a chain: train, heldout (its signature) or heldout_family (one of its ops)."""
        return split_of(signature, self.heldout_fraction, heldout_families=self.heldout_families)


@dataclass
class Attempt:
    """One answer sent to the judge, and what came back."""

    key: str
    task_id: str
    kind: str
    answer: str
    style: dict[str, Any]
    status: str = ""
    message: str = ""  # the judge's one-line verdict (why an answer was refused, for the stats)
    feedback: str = ""  # the rendered feedback (repair attempts: what the model is shown)
    corruption: str = ""
    fixed: str = ""  # repair attempts: the verified answer the broken one came from
    seconds: float = 0.0


def judge_config(config: ColdstartConfig) -> Any:
    """The judge's configuration for corpus answers. On cuda the answer is still timed and profiled
    (RH-03 needs the profile) but briefly, and the torch.compile baseline is skipped."""
    from kernelgym.judge import JudgeConfig

    extra: dict[str, Any] = {"num_trials": config.trials} if config.trials else {}
    if config.device == "cpu":
        return JudgeConfig(device="cpu", **extra)
    return JudgeConfig(device=config.device, timing_warmup=1, timing_reps=5, timing_input_sets=1,
                       time_compile_baseline=False, **extra)


def iter_tasks(config: ColdstartConfig) -> Iterator[tuple[Candidate, str]]:
    """(candidate, "" or why it was skipped) for generator indices 0, 1, 2, ...: the chains the
    task generator writes, with its duplicate and size filters."""
    from kernelgym.taskgen.validate import ValidationConfig

    v = ValidationConfig()
    seen: set[str] = set()
    for index in range(config.max_tasks or 4 * config.n + 20 * config.heldout_tasks):
        candidate = compose(config.seed, index)
        digest = code_hash(candidate.source)
        if digest in seen:
            yield candidate, "duplicate"
            continue
        seen.add(digest)
        why = estimate_within(candidate, v.est_min_ms, v.est_max_ms, v.max_footprint_gb * 2**30)
        yield candidate, "estimate" if why else ("" if supported(candidate) else "unsupported")


def style_of(style: Style) -> dict[str, Any]:
    """The drawn choices, for the row (what the corpus varies, countable in stats)."""
    return {"fuse_pointwise": style.fuse_pointwise, "fuse_epilogue": style.fuse_epilogue, "autotune": style.autotune,
            "helper_jit": style.helper_jit, "block": style.block, "warps": style.warps}


def _answers(config: ColdstartConfig, candidate: Candidate) -> list[Attempt]:
    out = []
    for j in range(config.answers_per_task):
        style = Style.draw(random.Random(f"coldstart:{config.seed}:{candidate.task_id}:{j}"))
        try:
            answer = write_answer(candidate, style)
        except UnsupportedOp:
            continue
        out.append(Attempt(key=f"{candidate.task_id}:{SINGLE}:{j}", task_id=candidate.task_id, kind=SINGLE,
                           answer=answer, style=style_of(style)))
    return out


class Log:
    """`judged.jsonl`: every attempt with its verdict, appended as it arrives."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.done: dict[str, Attempt] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    try:
                        a = Attempt(**json.loads(line))
                    except (json.JSONDecodeError, TypeError):
                        continue  # a line cut by a crash: judged again
                    self.done[a.key] = a

    def add(self, attempt: Attempt) -> None:
        self.done[attempt.key] = attempt
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(attempt)) + "\n")


def _judge(attempts: list[Attempt], tasks: dict[str, Any], config: ColdstartConfig, log: Log, jcfg: Any) -> None:
    """Judge `attempts` (those the log lacks) and log each verdict as it arrives."""
    from kernelgym.env.environment import EnvConfig
    from kernelgym.env.feedback import render_feedback
    from kernelgym.judge.batch import default_jobs, judge_many

    todo = [a for a in attempts if a.key not in log.done]
    if not todo:
        return
    feedback_chars = EnvConfig().feedback_chars
    start = time.perf_counter()
    interrupted = None
    try:
        results: list[Any] = judge_many([(tasks[a.task_id], a.answer) for a in todo], jcfg,
                                        jobs=config.jobs or default_jobs(), progress=False)
    except Interrupted as e:  # Ctrl-C: the verdicts that came back before it are logged all the same
        results, interrupted = e.done, e
    per = (time.perf_counter() - start) / len(todo)
    for a, r in zip(todo, results, strict=True):
        if r is None:
            continue
        a.status = r.status.value
        a.message = (r.message or r.error or "")[:300]
        a.seconds = round(per, 3)
        if a.kind == REPAIR:
            a.feedback = render_feedback(r, feedback_chars)
        log.add(a)
    if interrupted is not None:
        raise interrupted


def build(config: ColdstartConfig, progress: bool = True) -> dict[str, Any]:
    """Run the pipeline into `config.out`; returns the statistics (also written to stats.json)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    _claim(out, config)
    log = Log(out / "judged.jsonl")
    jcfg = judge_config(config)
    start = time.perf_counter()
    tasks: dict[str, Any] = {}
    candidates: dict[str, Candidate] = {}
    skipped: Counter[str] = Counter()
    skipped_ids: set[str] = set()
    accepted = 0
    columns = (TextColumn("[bold]coldstart[/bold]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
               TimeElapsedColumn())
    interrupted = False
    from kernelgym.judge.batch import default_jobs
    from kernelgym.worker.warm_pool import batch_pool

    with batch_pool(config.device, config.jobs or default_jobs(), config.warm_pool), \
            Progress(*columns, console=Console(stderr=True), disable=not progress) as bar:
        job = bar.add_task("", total=config.n)
        pending: list[Attempt] = []
        stream = iter_tasks(config)
        exhausted = False
        def out_of_time(extra: float = 0.0) -> bool:
            return interrupted or (bool(config.max_seconds)
                                   and time.perf_counter() - start >= config.max_seconds * (1 + extra))

        def judge_batch(batch: list[Attempt]) -> None:
            nonlocal interrupted
            try:
                _judge(batch, tasks, config, log, jcfg)
            except KeyboardInterrupt:  # Ctrl-C: like --max-seconds, what passed is written
                interrupted = True

        while accepted < config.n and not exhausted and not out_of_time():
            # no more answers in flight than the missing verified ones (plus a little for rejects)
            want = min(config.chunk, max(2, int(1.2 * (config.n - accepted)) + 1))
            while len(pending) < want:
                try:
                    candidate, why = next(stream)
                except StopIteration:
                    exhausted = True
                    break
                candidates[candidate.task_id] = candidate
                if why:
                    skipped[why] += 1
                    if why != "unsupported":  # a task nobody can answer yet still belongs in the task set
                        skipped_ids.add(candidate.task_id)
                    continue
                tasks[candidate.task_id] = candidate.task()
                pending += _answers(config, candidate)
            batch, pending = pending, []
            judge_batch(batch)
            accepted = sum(1 for a in log.done.values() if a.kind == SINGLE and a.status == "ok"
                           and a.task_id in tasks)
            bar.update(job, completed=min(accepted, config.n),
                       description=f"{len(tasks)} tasks, {sum(1 for a in log.done.values() if a.kind == SINGLE)} judged")
        verified = [a for a in log.done.values() if a.kind == SINGLE and a.status == "ok" and a.task_id in tasks]
        repairs = _repair_attempts(config, verified)
        if repairs:
            bar.update(job, description=f"judging {len(repairs)} repair examples")
            for i in range(0, len(repairs), config.chunk):
                if out_of_time(0.25):
                    break
                judge_batch(repairs[i:i + config.chunk])
    rows = corpus_rows(config, log, tasks, candidates)
    paths = write_corpus(rows, out)
    extra = _more_heldout(config, stream, candidates, skipped_ids)
    paths += write_tasks(config, {**candidates, **extra}, skipped_ids, out / "tasks")
    stats = corpus_stats(config, log, tasks, candidates, skipped, rows, time.perf_counter() - start)
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    stats["files"] = [str(p) for p in paths]
    stats["interrupted"] = interrupted
    return stats


def _more_heldout(config: ColdstartConfig, stream: Iterator[tuple[Candidate, str]], candidates: dict[str, Candidate],
                  skipped: set[str]) -> dict[str, Candidate]:
    """Further tasks (composed, never judged, never in the corpus) until each held-out split of the
    task set (heldout, and heldout_family with held-out families) has `config.heldout_tasks` tasks;
    further train-split tasks, and tasks of a split already full, are not kept."""
    extra: dict[str, Candidate] = {}
    splits = (HELDOUT, HELDOUT_FAMILY) if config.heldout_families else (HELDOUT,)
    count = {s: sum(1 for tid, c in candidates.items() if tid not in skipped and config.split(c.signature) == s)
             for s in splits}
    if min(count.values()) >= config.heldout_tasks:
        return extra
    for candidate, why in stream:
        split = config.split(candidate.signature)
        if why in ("duplicate", "estimate") or split not in count or count[split] >= config.heldout_tasks:
            continue
        extra[candidate.task_id] = candidate
        count[split] += 1
        if min(count.values()) >= config.heldout_tasks:
            break
    return extra


def _claim(out: Path, config: ColdstartConfig) -> None:
    """Record what the directory's verdicts depend on; refuse to resume one built differently
    (a verdict on the interpreter at the small size is not one at the full size on a GPU)."""
    key = {"seed": config.seed, "device": "cpu" if config.device == "cpu" else "cuda",
           "trials": config.trials, "heldout_fraction": config.heldout_fraction}
    if config.heldout_families:  # absent without: corpora built before held-out families resume as they were
        key["heldout_families"] = list(config.heldout_families)
    path = out / "corpus.json"
    if path.is_file():
        before = json.loads(path.read_text(encoding="utf-8"))
        if "merged" in before:
            raise ValueError(f"{out} is a merged corpus: build into another --out and merge again")
        if before != key:
            diff = ", ".join(f"{k} {before.get(k)!r} -> {v!r}" for k, v in key.items() if before.get(k) != v)
            raise ValueError(f"{out} holds a corpus built with other settings ({diff}): "
                             "choose another --out, or delete it to start again")
    path.write_text(json.dumps(key) + "\n", encoding="utf-8")


def _repair_attempts(config: ColdstartConfig, verified: list[Attempt]) -> list[Attempt]:
    rng = random.Random(f"coldstart-repair:{config.seed}")
    chosen = [a for a in verified if rng.random() < config.repair_fraction]
    out = []
    for a in chosen:
        made = corrupt(a.answer, random.Random(f"coldstart-repair:{config.seed}:{a.key}"))
        if made is None:
            continue
        name, broken = made
        out.append(Attempt(key=f"{a.key}:{REPAIR}", task_id=a.task_id, kind=REPAIR, answer=broken, style=a.style,
                           corruption=name, fixed=a.answer))
    return out


def _block(answer: str) -> str:
    return f"```python\n{answer.strip()}\n```"


def corpus_rows(config: ColdstartConfig, log: Log, tasks: dict[str, Any],
                candidates: dict[str, Candidate]) -> list[dict[str, Any]]:
    """The dataset rows: verified single-turn answers and repair examples whose broken answer failed."""
    from kernelgym.env.prompts import feedback_messages, first_messages, load_templates

    templates = load_templates()
    rows = []
    for a in sorted(log.done.values(), key=lambda a: a.key):
        if a.task_id not in tasks:
            continue
        task, cand = tasks[a.task_id], candidates[a.task_id]
        if a.kind == SINGLE and a.status == "ok":
            prompt, answer = first_messages(task, templates), a.answer
        elif a.kind == REPAIR and a.status not in ("ok", "") and a.fixed:
            prompt = [*first_messages(task, templates), {"role": "assistant", "content": _block(a.answer)},
                      *feedback_messages(a.feedback, templates)]
            answer = a.fixed
        else:
            continue
        rows.append({"task_id": a.task_id, "task_source": f"taskgen:{config.seed}:{cand.index}", "kind": a.kind,
                     "split": config.split(cand.signature), "signature": cand.signature,
                     "ops": list(cand.ops), "dtype": cand.dtype, "answer": answer, "prompt": prompt,
                     "completion": [{"role": "assistant", "content": _block(answer)}],
                     "corruption": a.corruption, "broken_status": a.status if a.kind == REPAIR else "",
                     # what the verdict rests on: a merged corpus can be filtered to full-size GPU verdicts
                     "verified_on": "cpu-small" if config.device == "cpu" else "cuda-full",
                     "style": json.dumps(a.style, sort_keys=True)})
    return rows


def write_corpus(rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """`train.jsonl`/`heldout.jsonl` always (readable without `datasets`), and a `datasets`
    dataset (`dataset/`, a DatasetDict by split) plus parquet files where `datasets` is installed."""
    paths = []
    by_split: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        by_split.setdefault(row["split"], []).append(row)
    for split, rs in by_split.items():
        path = out / f"{split}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rs), encoding="utf-8")
        paths.append(path)
    try:
        from datasets import Dataset, DatasetDict
    except ImportError:
        return paths
    dd = DatasetDict({split: Dataset.from_list(rs) for split, rs in by_split.items()})
    dd.save_to_disk(str(out / "dataset"))
    for split, ds in dd.items():
        ds.to_parquet(str(out / f"{split}.parquet"))
        paths.append(out / f"{split}.parquet")
    return [*paths, out / "dataset"]


def write_tasks(config: ColdstartConfig, candidates: dict[str, Candidate], skipped: set[str], out: Path) -> list[Path]:
    """The tasks the corpus was built on, as a generated task set (`gen:OUT/tasks[:heldout]`), with the
    same splits: evaluate a model on `gen:OUT/tasks:heldout` (op chains SFT never saw, of ops it saw) and,
    with held-out families, `gen:OUT/tasks:heldout_family` (ops whose kernels SFT never saw).
    Duplicates and tasks outside the size estimate are left out, as `tasks generate` leaves them out."""
    from kernelgym.taskgen.dataset import rows_by_split, write_split

    fmt = "parquet"
    try:
        import datasets  # noqa: F401
    except ImportError:
        fmt = "jsonl"
    rows = []
    for tid, c in candidates.items():
        if tid in skipped:
            continue
        task = c.task()
        rows.append({"task_id": tid, "name": task.name, "code": task.source, "level": task.level,
                     "problem_id": task.problem_id, "split": config.split(c.signature),
                     **c.metadata(), "eager_ms": None, "ast_hash": code_hash(c.source), "notes": [],
                     "seed": c.seed, "index": c.index})
    out.mkdir(parents=True, exist_ok=True)
    return [write_split(rs, out / split, fmt) for split, rs in rows_by_split(rows).items()]


def corpus_stats(config: ColdstartConfig, log: Log, tasks: dict[str, Any], candidates: dict[str, Candidate],
                 skipped: Counter[str], rows: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    singles = [a for a in log.done.values() if a.kind == SINGLE and a.task_id in tasks]
    ok_singles = [a for a in singles if a.status == "ok"]
    repairs = [a for a in log.done.values() if a.kind == REPAIR and a.task_id in tasks]
    answered = {a.task_id for a in ok_singles}
    library = {op.name for op in OPS}
    ops_answered = Counter(op for tid in answered for op in candidates[tid].ops)
    ops_attempted = Counter(op for tid in tasks for op in candidates[tid].ops)
    lengths = sorted(len(r["completion"][0]["content"]) for r in rows)
    return {
        "config": asdict(config),
        "rows": len(rows), "rows_by_kind": dict(Counter(r["kind"] for r in rows)),
        "rows_by_split": dict(Counter(r["split"] for r in rows)),
        "tasks_generated": len(candidates), "tasks_skipped": dict(skipped), "tasks_attempted": len(tasks),
        "tasks_answered": len(answered),
        "task_coverage": round(len(answered) / max(1, len(candidates) - skipped.get("duplicate", 0)
                                                   - skipped.get("estimate", 0)), 4),
        "acceptance_rate": round(len(ok_singles) / max(1, len(singles)), 4),
        "status_of_singles": dict(Counter(a.status for a in singles)),
        "refusals": dict(Counter(f"{a.status}: {a.message[:120]}" for a in singles if a.status != "ok").most_common(12)),
        "repair_broken_status": dict(Counter(a.status for a in repairs)),
        "repair_corruptions": dict(Counter(a.corruption for a in repairs if a.status != "ok")),
        "op_coverage": round(len(set(ops_answered)) / len(library), 4),
        "ops_answered": dict(ops_answered.most_common()),
        "ops_never_answered": sorted(library - set(ops_answered)),
        "ops_attempted_not_answered": sorted(set(ops_attempted) - set(ops_answered)),
        "dtype": dict(Counter(r["dtype"] for r in rows)),
        "completion_chars": {"min": lengths[0], "median": lengths[len(lengths) // 2], "max": lengths[-1]}
        if lengths else None,
        "judge_seconds_per_answer": round(sum(a.seconds for a in log.done.values()) / max(1, len(log.done)), 3),
        "seconds": round(seconds, 1),
    }


def merge(sources: list[str | Path], out: str | Path) -> dict[str, Any]:
    """One corpus from several (built on other machines, devices or seeds): rows and tasks are
    concatenated, a row whose (task, kind, answer) is already in is dropped, and the splits must
    agree (they do for corpora built with the same held-out fraction: splits key on the op chain)."""
    out = Path(out)
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    tasks: dict[str, dict[str, Any]] = {}
    settings = []
    for src in map(Path, sources):
        meta = src / "corpus.json"
        if not meta.is_file():
            raise ValueError(f"{src} is not a cold-start corpus (no corpus.json): build it with `kernelgym data coldstart`")
        settings.append({"source": str(src), **json.loads(meta.read_text(encoding="utf-8"))})
        for split_file in sorted(src.glob("*.jsonl")):
            if split_file.name == "judged.jsonl":
                continue
            for line in split_file.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    rows.setdefault((row["task_id"], row["kind"], row["answer"]), row)
        from kernelgym.taskgen.dataset import read_rows

        if (src / "tasks").is_dir():
            for row in read_rows(src / "tasks"):
                before = tasks.setdefault(row["task_id"], row)
                if before["code"] != row["code"]:
                    raise ValueError(f"task {row['task_id']} differs between sources (different seeds share ids "
                                     "only when their sources match)")
    if len({s["heldout_fraction"] for s in settings}) > 1:
        raise ValueError("the sources were split with different held-out fractions: " +
                         ", ".join(f"{s['source']}: {s['heldout_fraction']}" for s in settings))
    if len({tuple(s.get("heldout_families", ())) for s in settings}) > 1:
        raise ValueError("the sources were split with different held-out op families: " +
                         ", ".join(f"{s['source']}: {s.get('heldout_families', [])}" for s in settings))
    out.mkdir(parents=True, exist_ok=True)
    merged = list(rows.values())
    paths = write_corpus(merged, out)
    if tasks:
        from kernelgym.taskgen.dataset import rows_by_split, write_split

        (out / "tasks").mkdir(exist_ok=True)
        paths += [write_split(rs, out / "tasks" / split, "jsonl") for split, rs in rows_by_split(list(tasks.values())).items()]
    (out / "corpus.json").write_text(json.dumps({"merged": settings}) + "\n", encoding="utf-8")
    stats = {"rows": len(merged), "rows_by_kind": dict(Counter(r["kind"] for r in merged)),
             "rows_by_split": dict(Counter(r["split"] for r in merged)), "tasks": len(tasks),
             "ops_answered": len({op for r in merged if r["kind"] == SINGLE for op in r["ops"]}),
             "sources": settings}
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return {**stats, "files": [str(p) for p in paths]}
