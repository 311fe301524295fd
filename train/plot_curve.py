"""The learning curve of a `train/grpo.py` run, per optimiser step, as one PNG (and a CSV beside it).

    python -m train.plot_curve runs/grpo_coldstart/trainer_state.json --out runs/grpo_coldstart/curve.png

Reads the `log_history` that TRL's trainer writes into trainer_state.json (or a checkpoint's): the
rollout metrics of `train.metrics` (reward, compiled, correct, fast_1, fast_1.2, turns used, status
shares) and the step's time split (`timing/*`). Panels whose metrics the run never logged are left
out; a metric missing at a step (NaN left out by the logger) is a gap, not a zero.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any

# (panel title, y label, [(log key, legend label)]); status shares are found by prefix.
PANELS: list[tuple[str, str, list[tuple[str, str]]]] = [
    ("Reward", "mean per judged answer", [("reward", "episode return (TRL)"), ("kernelgym/turn_reward", "turn reward"),
                                          ("kernelgym/first_turn_reward", "first turn"),
                                          ("kernelgym/last_turn_reward", "last turn")]),
    ("Compiled and correct", "share", [("kernelgym/compiled", "compiled (answers)"),
                                       ("kernelgym/correct", "correct (answers)"),
                                       ("kernelgym/episode_correct", "correct (episodes, best turn)")]),
    ("Faster than eager", "share of episodes", [("kernelgym/fast_1", "fast_1"), ("kernelgym/fast_1.2", "fast_1.2")]),
    ("Turns used", "turns per episode", [("kernelgym/turns_used", "turns used")]),
    ("Time per step", "seconds", [("timing/step_s", "step"), ("timing/rollout_s", "rollout"),
                                  ("timing/update_s", "update"), ("timing/generate_s", "generate"),
                                  ("timing/judge_s", "judge")]),
]
STATUS_PREFIX = "kernelgym/status/"


class CurveError(ValueError):
    """The file holds no training log this can plot."""


def read_log(path: Path) -> list[dict[str, Any]]:
    """The per-step entries of a trainer_state.json's log_history (those with a `step`)."""
    try:
        state = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise CurveError(f"cannot read {path}: {e}") from None
    rows = [h for h in state.get("log_history", []) if isinstance(h, dict) and "step" in h]
    rows = [h for h in rows if any(k.startswith(("kernelgym/", "timing/")) or k == "reward" for k in h)]
    if not rows:
        raise CurveError(f"{path} has no logged training steps (log_history is empty or holds no rollout metrics)")
    return rows


def series(rows: list[dict[str, Any]], key: str) -> tuple[list[int], list[float]]:
    points = [(int(h["step"]), float(h[key])) for h in rows if isinstance(h.get(key), (int, float))]
    return ([s for s, _ in points], [v for _, v in points])


def write_csv(rows: list[dict[str, Any]], out: Path) -> None:
    keys = sorted({k for h in rows for k in h if k == "reward" or k.startswith(("kernelgym/", "timing/"))})
    with out.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["step", *keys])
        for h in rows:
            writer.writerow([h["step"], *[h.get(k, "") for k in keys]])


def plot(rows: list[dict[str, Any]], out: Path, title: str = "") -> list[str]:
    """Draw every panel that has data into `out`; returns the panel titles drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    statuses = sorted({k for h in rows for k in h if k.startswith(STATUS_PREFIX)})
    panels = PANELS + [("Verdicts", "share of answers", [(k, k.removeprefix(STATUS_PREFIX)) for k in statuses])]
    drawn = [(t, y, [(k, label) for k, label in keys if series(rows, k)[0]]) for t, y, keys in panels]
    drawn = [p for p in drawn if p[2]]
    cols = 2
    fig, axes = plt.subplots((len(drawn) + cols - 1) // cols, cols, figsize=(12, 3.4 * ((len(drawn) + 1) // cols)),
                             squeeze=False)
    for ax, (name, ylabel, keys) in zip(axes.flat, drawn):
        for key, label in keys:
            ax.plot(*series(rows, key), marker="o", markersize=2, label=label)
        ax.set_title(name)
        ax.set_xlabel("optimiser step")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(drawn):]:
        ax.axis("off")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return [name for name, _, _ in drawn]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("state", type=Path, help="trainer_state.json of a run (or of one of its checkpoints)")
    parser.add_argument("--out", type=Path, default=None, help="PNG to write (default: curve.png beside the state)")
    parser.add_argument("--title", default="", help="figure title")
    args = parser.parse_args(argv)
    out = args.out or args.state.with_name("curve.png")
    try:
        rows = read_log(args.state)
    except CurveError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    write_csv(rows, out.with_suffix(".csv"))
    try:
        drawn = plot(rows, out, args.title)
    except ImportError:
        print(f"matplotlib is not installed: wrote only {out.with_suffix('.csv')} (`pip install matplotlib`)",
              file=sys.stderr)
        return 0
    print(f"{len(rows)} steps, panels: {', '.join(drawn)} -> {out} (and {out.with_suffix('.csv')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
