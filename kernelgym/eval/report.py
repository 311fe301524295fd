"""The eval report: `report.md` with the metrics tables, and PNG plots beside it (matplotlib).

Everything here renders what `metrics.evaluate` computed (and, for plots, the attempts
themselves); nothing is recomputed differently. Without matplotlib the report is written without
plots and says how to add them.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kernelgym.eval.metrics import BASELINES, FAST_P, at_turn, best_so_far, fast_p, speedup
from kernelgym.eval.records import Attempt
from kernelgym.judge.result import Status
from kernelgym.tasks.preflight import TaskCheck
from rewards.functions import is_pass

FILES_NOTE = ("`run.json` (settings, model provenance, each command with its commit), `generations.jsonl` (every "
              "answer's full text: `kernelgym eval --rejudge DIR --out NEW` judges them again without a model), "
              "`results.jsonl` (every verdict, the full "
              "`EvalResult`), `audit.jsonl` (degenerate-task audit) or `preflight.jsonl` (without it), "
              "`metrics.json` (every number above).")
PLOTS = {"fast_p": "fast_p.png", "speedups": "speedups.png", "turns": "turns.png", "outcomes": "outcomes.png"}


def write_report(out_dir: Path, metrics: dict[str, Any], info: dict[str, Any], attempts: Sequence[Attempt]) -> Path:
    """Write report.md (and the plots) into `out_dir`; returns the report's path."""
    out_dir = Path(out_dir)
    plots, why_not = write_plots(out_dir, metrics, attempts)
    lines = [*_header(metrics, info, attempts), *_headline(metrics), *_compile_baseline(metrics), *_per_turn(metrics),
             *_outcomes(metrics), *_cheats(metrics), *_degenerate(metrics, info), *_not_judged(metrics, info),
             *_per_task(metrics)]
    lines += ["## Plots", ""]
    if plots:
        lines += [f"![{name}]({file})" for name, file in plots.items()] + [""]
    if why_not:
        lines += [f"_{why_not}_", ""]
    lines += ["## Files", "", FILES_NOTE, ""]
    path = out_dir / "report.md"
    path.write_text("\n".join(lines))
    return path


def _provenance(info: dict[str, Any]) -> list[tuple[str, str]]:
    """Rows for what the numbers rest on: the model's weights (hash, origin), the commit, the command."""
    rows = []
    model = info.get("model_provenance")
    if model:
        what = [f"{k} `{model[k]}`" for k in ("sha256", "id", "api_base") if model.get(k)]
        what += [f"{name} sha256 `{digest[:16]}…`" for name, digest in (model.get("files") or {}).items()]
        rows.append(("model provenance", "; ".join([*what, model.get("note") or "nothing known beyond the spec"])))
    if info.get("generator", {}).get("rejudged_from"):
        rows.append(("answers", f"re-judged from `{info['generator']['rejudged_from']}` (no model ran)"))
    for n, call in enumerate(info.get("invocations", []), 1):
        dirty = {True: " (with uncommitted changes)", False: "", None: " (changes unknown)"}[call.get("dirty")]
        label = "command" if len(info["invocations"]) == 1 else f"command {n}"
        rows.append((label, f"`{call.get('command', '?')}` at commit `{call.get('commit', 'unknown')}`{dirty}, "
                            f"{call.get('at', '?')}"))
    return rows


def _header(m: dict[str, Any], info: dict[str, Any], attempts: Sequence[Attempt]) -> list[str]:
    c = info.get("config", {})
    places = Counter(a.result.gpu_name or a.result.device for a in attempts if a.result.gpu_name or a.result.device)
    judged_on = ", ".join(f"{name} ({n} answers)" for name, n in places.most_common())
    gen = info.get("generator", {})
    judge = info.get("judge", {})
    window = c.get("context_turns") or "all"
    rows = [("model", f"`{c.get('model', '?')}` ({gen.get('backend', '?')})"),
            ("tasks", f"{len(info.get('tasks', []))} from `{info.get('tasks_spec', '?')}`"),
            ("samples x turns", f"{m['samples']} x {m['turns']} (previous turns in the prompt: {window})"),
            ("generation", (f"temperature {c.get('temperature')}, max {c.get('max_new_tokens')} new tokens, "
                            f"seed {c.get('seed')}")),
            ("judge", ", ".join(f"{k} {v}" for k, v in judge.items()) or "defaults"),
            ("judged on", judged_on or "-"), ("started", str(info.get("started", "?"))), *_provenance(info)]
    out = [f"# KernelGym eval: {c.get('model', '?')}", "", "| | |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in rows]
    notes = []
    overall = m["overall"]
    if overall["untimed_passes"]:
        notes.append(f"{overall['untimed_passes']} correct answer(s) were not timed (CPU judge or timing failure): "
                     "fast_p for p > 0 counts them as not fast, or reads n/a when no correct answer was timed.")
    over = m.get("over_limits", [])
    if over:
        notes.append(f"{len(over)} task(s) were not judged: their reference work hit a limit in its child (or the "
                     "task is broken). They count in no number here; see Tasks not judged.")
    if overall["system_errors"]:
        notes.append(f"{overall['system_errors']} answer(s) could not be judged (system_error) and count as failures; "
                     "run the same command again to judge them again.")
    return out + [""] + [f"> {n}" for n in notes] + ([""] if notes else [])


def _headline(m: dict[str, Any]) -> list[str]:
    ks = m["pass_k"]
    head = (["group", "tasks", "answers", "compiled", "correct"] + [f"fast_{p:g}" for p in FAST_P]
            + ["geomean speedup (eager)", "triton share"] + [f"pass@{k}" for k in ks])
    groups = {**m["levels"], "**overall**": m["overall"]}
    rows = [[name, s["tasks"], s["attempts"], _pct(s["compile_rate"]), _pct(s["correct_rate"]),
             *[_pct(s["fast_p"]["eager"][f"{p:g}"]) for p in FAST_P], _x(s["geomean_speedup"]["eager"]),
             _pct(s["triton_share"]), *[_pct(s["pass_at_k"][str(k)]) for k in ks]] for name, s in groups.items()]
    names = {"compile_rate": "compiled", "correct_rate": "correct", "fast_1": "fast_1", "fast_1.2": "fast_1.2",
             "cheat_rate": "cheat"}
    ci_rows = [[name, *[_interval(s.get("ci95", {}).get(k)) for k in names]] for name, s in groups.items()]
    return ["## Headline: best of turns, per level", "",
            ("Each sample counts its best answer over all turns. fast_p = share of all answers that are correct and "
             "more than p times faster than PyTorch eager (KernelBench); failures count as not fast. "
             "compiled = the answer built `ModelNew` and its Triton kernels compiled (a Triton compile error "
             "at the first launch is not compiled, as KernelBench counts it)."), "",
            *_table(head, rows), "",
            ("95 % intervals (Wilson, at the effective sample size of the task-clustered variance: a task's samples "
             "are not independent):"), "",
            *_table(["group", *names.values()], ci_rows), ""]


def _compile_baseline(m: dict[str, Any]) -> list[str]:
    head = ["group"] + [f"fast_{p:g} vs compile" for p in FAST_P if p > 0] + ["geomean vs compile"]
    groups = {**m["levels"], "**overall**": m["overall"]}
    rows = [[name, *[_pct(s["fast_p"]["compile"][f"{p:g}"]) for p in FAST_P if p > 0],
             _x(s["geomean_speedup"]["compile"])] for name, s in groups.items()]
    return ["## Speedup against torch.compile", "", *_table(head, rows), ""]


def _per_turn(m: dict[str, Any]) -> list[str]:
    head = ["turn", "answers", "compiled", "correct", "fast_1", "geomean (eager)", "best so far: correct",
            "best so far: fast_1", "best so far: pass@1", "best so far: geomean"]
    rows = []
    for t in m["per_turn"]:
        a, b = t["at_turn"], t["best_so_far"]
        rows.append([t["turn"], a["attempts"], _pct(a["compile_rate"]), _pct(a["correct_rate"]),
                     _pct(a["fast_p"]["eager"]["1"]), _x(a["geomean_speedup"]["eager"]), _pct(b["correct_rate"]),
                     _pct(b["fast_p"]["eager"]["1"]), _pct(b["pass_at_k"]["1"]), _x(b["geomean_speedup"]["eager"])])
    return ["## Per turn", "", "Turn t alone, and each sample's best answer over turns 1..t (test-time scaling).",
            "", *_table(head, rows), ""]


def _outcomes(m: dict[str, Any]) -> list[str]:
    statuses = [s.value for s in Status if any(s.value in t["at_turn"]["statuses"] for t in m["per_turn"])]
    rows = [[t["turn"], *[t["at_turn"]["statuses"].get(s, 0) for s in statuses]] for t in m["per_turn"]]
    return ["## Outcomes per turn", "", *_table(["turn", *statuses], rows), ""]


def _cheats(m: dict[str, Any]) -> list[str]:
    groups = {**m["all_answers"]["levels"], "**overall**": m["all_answers"]["overall"]}
    rules = sorted({r for s in groups.values() for r in s["cheats_by_rule"]})
    rows = [[name, s["attempts"], _pct(s["cheat_rate"]), *[_pct(s["cheats_by_rule"].get(r, 0.0)) for r in rules]]
            for name, s in groups.items()]
    return ["## Cheats, by threat rule (all answers of all turns)", "",
            "Rules are the RH codes of THREATS.md; an answer that broke several rules counts once under each.", "",
            *_table(["group", "answers", "cheat rate", *rules], rows), ""]


def _degenerate(m: dict[str, Any], info: dict[str, Any]) -> list[str]:
    out = ["## Degenerate tasks", ""]
    d = m["degenerate"]
    if not info.get("audited", True):
        return out + ["The degenerate-task audit was not run (--no-audit).", ""]
    if not d["tasks"]:
        return out + ["The audit flagged no task: an answer that computes nothing passes none of them.", ""]
    s = d["overall"]
    flagged = ", ".join(f"`{t}`" for t in d["tasks"])
    where = ("they are counted in every number above (--keep-degenerate)" if d.get("in_headline")
             else "they are left out of every number above (--keep-degenerate keeps them)")
    out += [(f"The audit flagged {len(d['tasks'])} task(s) that an answer computing nothing would pass; "
             f"{where}: {flagged}."), ""]
    if s:
        out += _table(["tasks", "answers", "compiled", "correct", "fast_1"],
                      [[s["tasks"], s["attempts"], _pct(s["compile_rate"]), _pct(s["correct_rate"]),
                        _pct(s["fast_p"]["eager"]["1"])]]) + [""]
    return out


def _not_judged(m: dict[str, Any], info: dict[str, Any]) -> list[str]:
    over = m.get("over_limits", [])
    if not over:
        return []
    where = "audit" if info.get("audited", True) else "preflight"
    checks = [TaskCheck.from_dict(c) for c in over]
    rows = [[f"`{c.task_id}`", c.label, f"{c.seconds:.1f}" if c.seconds else "-",
             (c.message or "-").replace("|", "/").replace("\n", " ")] for c in checks]
    return ["## Tasks not judged", "",
            (f"Each task's reference work ran first in its own memory- and time-limited child ({where}). These "
             f"{len(over)} task(s) hit a limit there (or are broken), so no answer was generated or judged for them: "
             "building their reference in the judge could take the machine down. They are left out of every "
             "number above."), "",
            *_table(["task", "status", "seconds", "why"], rows), ""]


def _per_task(m: dict[str, Any]) -> list[str]:
    head = ["task", "level", "samples", "passed", "best status", "best turn", "speedup (eager)", "speedup (compile)"]
    rows = [[f"`{r['task_id']}`" + (" (degenerate)" if r["degenerate"] else ""), r["level"] or "-", r["samples"],
             r["passed"], r["best_status"], r["best_turn"] or "-", _x(r["speedup_eager"]), _x(r["speedup_compile"])]
            for r in m["tasks"]]
    return ["## Per task (best of turns)", "", *_table(head, rows), ""]


def write_plots(out_dir: Path, metrics: dict[str, Any], attempts: Sequence[Attempt]) -> tuple[dict[str, str], str]:
    """The PNGs that have something to show: {name: file}, and why any were left out."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}, ("Plots were not drawn: matplotlib is not installed. `pip install matplotlib`, then "
                    "`kernelgym eval --report-only --out DIR` draws them from the JSONL.")
    degenerate = set() if metrics["degenerate"].get("in_headline") else set(metrics["degenerate"]["tasks"])
    left_out = degenerate | {c["task_id"] for c in metrics.get("over_limits", [])}
    main = [a for a in attempts if a.task_id not in left_out]
    turns = metrics["turns"]
    best = best_so_far(main, turns)
    done, skipped = {}, []
    for name, draw in (("fast_p", _plot_fast_p), ("speedups", _plot_speedups), ("turns", _plot_turns),
                       ("outcomes", _plot_outcomes)):
        fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
        shown = draw(ax, main, best, metrics)
        if shown:
            fig.tight_layout()
            fig.savefig(out_dir / PLOTS[name])
            done[name] = PLOTS[name]
        else:
            skipped.append(name)
        plt.close(fig)
    why = f"Not drawn, no timed correct answers: {', '.join(skipped)}." if skipped else ""
    return done, why


def _plot_fast_p(ax: Any, main: list[Attempt], best: list[Attempt], m: dict[str, Any]) -> bool:
    timed = [s for a in best if is_pass(a.result) for b in BASELINES if (s := speedup(a.result, b)) is not None]
    if not timed:
        return False
    grid = [i * max(3.0, max(timed) * 1.1) / 200 for i in range(201)]
    curves = [("best of turns, vs eager", best, "eager"), ("best of turns, vs torch.compile", best, "compile")]
    if m["turns"] > 1:
        curves.append(("turn 1, vs eager", at_turn(main, 1), "eager"))
    for label, view, baseline in curves:
        ax.plot(grid, [100 * (fast_p(view, p, baseline) or 0.0) for p in grid], label=label)
    for p in FAST_P[1:]:
        ax.axvline(p, color="grey", lw=0.5, ls=":")
    ax.set(xlabel="speedup threshold p", ylabel="fast_p (% of all answers)", title="fast_p curve")
    ax.legend()
    return True


def _plot_speedups(ax: Any, main: list[Attempt], best: list[Attempt], m: dict[str, Any]) -> bool:
    series = {b: [s for a in best if is_pass(a.result) and (s := speedup(a.result, b)) is not None and s > 0]
              for b in BASELINES}
    if not any(series.values()):
        return False
    values = [math.log2(s) for v in series.values() for s in v]
    lo, hi = math.floor(min(values)), math.ceil(max(values))
    bins = [lo + i * 0.25 for i in range(int((hi - lo) / 0.25) + 2)]
    for b, v in series.items():
        ax.hist([math.log2(s) for s in v], bins=bins, alpha=0.6, label=f"vs {b} (n={len(v)})")
    ax.axvline(0, color="black", lw=0.8)
    ticks = list(range(lo, hi + 1))
    ax.set_xticks(ticks, [f"{2.0 ** k:g}x" for k in ticks])
    ax.set(xlabel="speedup of correct answers, best of turns (log scale)", ylabel="answers",
           title="Speedup distribution")
    ax.legend()
    return True


def _plot_turns(ax: Any, main: list[Attempt], best: list[Attempt], m: dict[str, Any]) -> bool:
    turns = [t["turn"] for t in m["per_turn"]]
    series = [("compiled, turn t", "at_turn", "compile_rate", "-"), ("correct, turn t", "at_turn", "correct_rate", "-"),
              ("correct, best so far", "best_so_far", "correct_rate", "--")]
    if any(t["best_so_far"]["fast_p"]["eager"]["1"] is not None for t in m["per_turn"]):
        series += [("fast_1, turn t", "at_turn", "fast_1", "-"), ("fast_1, best so far", "best_so_far", "fast_1", "--")]
    for label, view, key, style in series:
        values = [_value(t[view], key) for t in m["per_turn"]]
        ax.plot(turns, [100 * (v or 0.0) for v in values], style, marker="o", label=label)
    ax.set(xlabel="turn", ylabel="% of answers", title="Per-turn progress", xticks=turns, ylim=(0, 102))
    ax.legend()
    return True


def _plot_outcomes(ax: Any, main: list[Attempt], best: list[Attempt], m: dict[str, Any]) -> bool:
    turns = [t["turn"] for t in m["per_turn"]]
    bottom = [0] * len(turns)
    colours = dict(zip(Status, ("tab:green", "tab:orange", "tab:red", "tab:purple", "tab:olive", "black", "tab:brown",
                                "tab:pink", "tab:gray", "tab:cyan")))
    for status in Status:
        counts = [t["at_turn"]["statuses"].get(status.value, 0) for t in m["per_turn"]]
        if any(counts):
            ax.bar(turns, counts, bottom=bottom, label=status.value, color=colours[status])
            bottom = [b + c for b, c in zip(bottom, counts)]
    ax.set(xlabel="turn", ylabel="answers", title="Outcomes per turn", xticks=turns)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return True


def _value(summary: dict[str, Any], key: str) -> float | None:
    return summary["fast_p"]["eager"]["1"] if key == "fast_1" else summary[key]


def _table(head: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}%"


def _interval(v: list[float] | None) -> str:
    return "n/a" if v is None else f"{100 * v[0]:.1f}–{100 * v[1]:.1f}%"


def _x(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}x"
