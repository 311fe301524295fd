#!/usr/bin/env bash
# Judge throughput on the GPU (issue 17) in one call: `kernelgym bench service` on the 40-answer
# default mix and on the training mix (generated tasks at training sizes), each with this working
# tree ("after") and with an older commit ("before", default 0cdfcec), plus one small run with the
# spawn-per-candidate baseline beside the service. Same flags as the numbers in docs/BENCHMARKS.md:
# --device cuda --no-compile-baseline --timeout 30, --no-baseline --repeats 0 for the mixes.
# Results land in ${OUT:-throughput_check_out}/: one JSON report and one log per run, summary.txt.
#
# Usage: bash launch/throughput_check.sh [sanity] [after] [before] [baseline] [all]   (default: all)
#   sanity    two GPU judge tests that go through timing and the profile (the protocol changed)
#   after     both mixes with this working tree
#   before    both mixes with BEFORE_REF (default 0cdfcec)
#   baseline  n=${BASELINE_N:-6} with the spawn baseline in the same run (this working tree)
# Stages run in the order sanity, after, before, baseline. Each bench run is cut at STAGE_LIMIT_S
# (default 240 s) and at what is left of TOTAL_LIMIT_S (default 540 s: a 10-minute device call
# with room for start-up); a run with under 60 s left is skipped and says so in stages.txt, and
# summary.txt is rewritten after every run, so a cut call still leaves the runs it finished.
# Expected on an H100: ~8-9 minutes for all of it, so the baseline run may be left for a second
# call (`bash launch/throughput_check.sh baseline`).
#
# Where the "before" code comes from, first that works:
#   1. BEFORE_DIR, a checkout of it you made yourself;
#   2. `git worktree add` of BEFORE_REF (needs this repository's .git with that commit);
#   3. runs/before_src.tgz, made where the history is by
#        git archive --format=tar.gz -o runs/before_src.tgz 0cdfcec
#      (runs/ is git-ignored: carry it to the device machine, with runs/coldstart_all2.tgz).
# The training mix needs runs/coldstart_all2/ (a cold-start corpus) or runs/coldstart_all2.tgz,
# which is unpacked into runs/ here.
set -uo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-throughput_check_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
stages=("$@"); [[ ${#stages[@]} -eq 0 ]] && stages=(all)
want() { local s; for s in "${stages[@]}"; do [[ $s == "$1" || $s == all ]] && return 0; done; return 1; }
limit="${STAGE_LIMIT_S:-240}"
total="${TOTAL_LIMIT_S:-540}"
before_ref="${BEFORE_REF:-0cdfcec}"
corpus="${CORPUS:-runs/coldstart_all2}"
mix_flags=(--device cuda --no-baseline --repeats 0 --no-compile-baseline --timeout 30)
rc=0

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
(git rev-parse HEAD 2>/dev/null || echo "no git history here") > "$out/after_commit.txt"

if [[ ! -d $corpus && -f $corpus.tgz ]]; then
  tar -xzf "$corpus.tgz" -C "$(dirname "$corpus")"
fi
if [[ -d $corpus ]]; then
  corpus="$(cd "$corpus" && pwd)"  # the "before" runs start in another directory
else
  echo "no $corpus (or $corpus.tgz): the training-mix runs are skipped" | tee -a "$out/notes.txt"
fi

# One table of every report here: throughput, latency, GPU shares, crash cost, verdicts, and the
# median seconds per phase of correct / wrong / crashing answers (the reports' own details).
summarize() {
python - "$out" <<'EOF' | tee "$out/summary.txt"
import json, statistics, sys
from pathlib import Path

out = Path(sys.argv[1])
def pct(x):
    return "-" if x is None else f"{x:.0%}"
def num(x, spec=".2f"):
    return "-" if x is None else format(x, spec)
print(f"{'run':34} {'mode':9} {'n':>3} {'wall s':>7} {'evals/min':>9} {'p50 s':>6} {'p95 s':>6} {'kernel-busy':>11} "
      f"{'held':>5} {'timing':>6} {'crash s':>7} {'unexpected':>10} {'ok unprofiled':>13}")
phases = {}
for path in sorted(p for p in out.glob("*.json") if p.name != "summary.json"):
    report = json.loads(path.read_text())
    for m in report.get("modes", []):
        details = m.get("details") or []
        unprofiled = sum(1 for d in details if d.get("status") == "ok" and d.get("profiled") is False)
        print(f"{path.stem:34} {m['mode'].split()[0]:9} {m['n']:>3} {m['wall_s']:>7.1f} {m['evals_per_min']:>9.1f} "
              f"{m['p50_latency_s']:>6.1f} {m['p95_latency_s']:>6.1f} {pct(m.get('kernel_busy_share')):>11} "
              f"{pct(m.get('held_share')):>5} {pct(m.get('busy_share')):>6} {num(m.get('crash_cost_s')):>7} "
              f"{len(m['unexpected']):>10} {unprofiled:>13}")
        if m["mode"] == "service":
            for kind in ("correct", "wrong_output", "crash"):
                rows = [d for d in details if d["kind"] == kind]
                if rows:
                    keys = sorted({k for d in rows for k in d.get("phase_seconds") or {}})
                    med = {k: statistics.median((d.get("phase_seconds") or {}).get(k, 0.0) for d in rows) for k in keys}
                    med["wall"] = statistics.median(d["wall_seconds"] or 0.0 for d in rows)
                    if all("trials" in d for d in rows):
                        med["trials"] = statistics.median(d["trials"] for d in rows)
                    phases[f"{path.stem} {kind}"] = med
print("\nmedian seconds per phase (service mode)")
for name, med in phases.items():
    print(f"  {name:40} " + ", ".join(f"{k} {v:.3g}" for k, v in med.items()))
(out / "summary.json").write_text(json.dumps(phases, indent=1))
EOF
}

# bench NAME DIR ARGS...: one `kernelgym bench service` run with the code in DIR.
bench() {
  local name=$1 dir=$2; shift 2
  local t0=$SECONDS left=$((total - SECONDS))
  if (( left < 60 )); then
    echo "$name: skipped, ${left} s left of TOTAL_LIMIT_S=$total" | tee -a "$out/stages.txt"
    return
  fi
  (cd "$dir" && PYTHONPATH="$dir" timeout -k 10 "$(( left < limit ? left : limit ))" \
    python -m kernelgym.cli bench service "$@" --json-out "$out/$name.json") > "$out/$name.log" 2>&1
  local code=$?
  echo "$name: exit $code after $((SECONDS - t0)) s" | tee -a "$out/stages.txt"
  tail -n 30 "$out/$name.log"
  [[ $code -eq 0 ]] || rc=1
  summarize > /dev/null
}

# mixes NAME DIR: the default mix and, when the corpus is here, the training mix.
mixes() {
  bench "$1_mix40" "$2" "${mix_flags[@]}" --n 40
  if [[ -d $corpus ]]; then
    bench "$1_train64" "$2" "${mix_flags[@]}" --corpus "$corpus" --n 64
  fi
}

before_dir() {
  if [[ -n ${BEFORE_DIR:-} ]]; then
    echo "$BEFORE_DIR"; return
  fi
  local dir="${TMPDIR:-/tmp}/kernelgym_before_$before_ref"
  if [[ -d $dir/kernelgym ]]; then
    echo "$dir"; return
  fi
  if git rev-parse --verify -q "$before_ref^{commit}" > /dev/null 2>&1 \
      && git worktree add --detach "$dir" "$before_ref" > /dev/null 2>&1; then
    echo "$dir"; return
  fi
  if [[ -f runs/before_src.tgz ]]; then
    mkdir -p "$dir" && tar -xzf runs/before_src.tgz -C "$dir" && echo "$dir"; return
  fi
  return 1
}

if want sanity; then
  timeout -k 10 "$limit" python -m pytest -m gpu -q -p no:cacheprovider tests/gpu/test_gpu_judge.py \
    -k "ok_answer_is_timed_and_profiled or torch_compute_hidden_from_static_rules" > "$out/sanity.log" 2>&1 || rc=1
  tail -n 5 "$out/sanity.log"
fi
if want after; then
  mixes after "$root"
fi
if want before; then
  if dir=$(before_dir); then
    (cd "$dir" && git rev-parse HEAD 2>/dev/null || echo "$before_ref (from runs/before_src.tgz)") > "$out/before_commit.txt"
    mixes before "$dir"
  else
    echo "no source for $before_ref: set BEFORE_DIR, or carry runs/before_src.tgz (see the header)" | tee -a "$out/notes.txt"
    rc=1
  fi
fi

if want baseline; then
  bench "after_baseline_n${BASELINE_N:-6}" "$root" --device cuda --repeats 0 --no-compile-baseline --timeout 30 \
    --n "${BASELINE_N:-6}"
fi
summarize
exit $rc
