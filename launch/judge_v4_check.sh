#!/usr/bin/env bash
# Judge v4 (record, then replay) on a GPU in one call; results in ${OUT:-judge_v4_out}/.
# Usage: bash launch/judge_v4_check.sh [sanity] [bench] [redteam] [corpora] [tests]   (default: sanity bench)
#   sanity   three built-in answers judged with --engine replay (full JSON results)
#   bench    `kernelgym bench service` on the default 40-answer mix, --engine inprocess ("before")
#            then --engine replay ("after"), same machine, same flags as docs/BENCHMARKS.md; with
#            BEFORE_TREE=DIR, that tree's replay engine is "before"; BENCH_TREES="name:DIR ..." judges each
#            tree in turn (replay engine); BENCH_FLAGS adds flags to every run
#   redteam  every exploit, honest, built-in and external answer with --engine replay (JSONL), one shard per GPU
#            of REDTEAM_GPUS (default: all), JOBS evaluations in flight on each, cut at REDTEAM_LIMIT_S;
#            REDTEAM_FLAGS adds flags (e.g. --no-exploits, --only RH-14)
#   corpora  every built-in, honest and external answer (launch/judge_v4_corpora.py), ENGINE=replay
#   tests    the GPU-marked tests (cut at TESTS_LIMIT_S)
# Each stage is cut at STAGE_LIMIT_S (default 220 s).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-judge_v4_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
stages=("$@"); [[ ${#stages[@]} -eq 0 ]] && stages=(sanity bench)
want() { local s; for s in "${stages[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }
limit="${STAGE_LIMIT_S:-220}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
# What the host gives us: a CPU quota below nproc makes host-bound phases slow (measure, compile).
{ echo "nproc $(nproc) | cpu.max $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo n/a) | $(uptime)"; } | tee -a "$out/gpu.txt"
rc=0
if want sanity; then
  for t in relu softmax matmul_square; do
    timeout "$limit" python -m kernelgym.cli judge "$t" "data/answers/$t.py" --device cuda --engine replay --json \
      --no-compile-baseline > "$out/sanity_$t.json" 2> "$out/sanity_$t.err" || rc=1
    python - "$out/sanity_$t.json" <<'PY' || tail -n 20 "$out/sanity_$t.err"
import json, sys
r = json.load(open(sys.argv[1]))
rt = r.get("runtime") or {}
print(r["task_id"], r["status"], r["message"][:200], "| median ms", rt.get("median_ms"), "| phases", r["phase_seconds"])
PY
  done
fi
if want bench; then
  # BEFORE_TREE=DIR: "before" is that tree (e.g. `git archive <commit>` unpacked, untracked so that it
  # travels with the working tree) judged with --engine replay, "after" this tree; else the two engines here.
  runs=("inprocess:." "replay:."); [[ -n ${BEFORE_TREE:-} ]] && runs=("before:$BEFORE_TREE" "after:.")
  [[ -n ${BENCH_TREES:-} ]] && read -ra runs <<< "$BENCH_TREES"
  for run in "${runs[@]}"; do
    name=${run%%:*} tree=${run#*:} engine=replay; [[ $name == inprocess ]] && engine=inprocess
    (cd "$tree" && PYTHONPATH="$PWD" timeout "$limit" python -m kernelgym.cli bench service --device cuda --no-baseline \
      --repeats 0 --no-compile-baseline --timeout 30 --engine "$engine" ${BENCH_FLAGS:-} \
      --json-out "$out/bench_$name.json") > "$out/bench_$name.log" 2>&1 || rc=1
    echo "== bench $name ($tree)"; tail -n 30 "$out/bench_$name.log"
  done
fi
if want redteam; then
  # One shard per GPU (REDTEAM_GPUS, default every GPU): `--shard k/n` judges every n-th answer from the k-th.
  IFS=, read -ra gpus <<< "${REDTEAM_GPUS:-$(nvidia-smi --query-gpu=index --format=csv,noheader | paste -sd,)}"
  pids=()
  for k in "${!gpus[@]}"; do
    CUDA_VISIBLE_DEVICES="${gpus[$k]}" timeout "${REDTEAM_LIMIT_S:-420}" python -m kernelgym.cli redteam --device cuda \
      --engine replay --external --jobs "${JOBS:-8}" --no-compile-baseline --shard "$k/${#gpus[@]}" ${REDTEAM_FLAGS:-} \
      --json-out "$out/redteam_$k.jsonl" > "$out/redteam_$k.log" 2>&1 &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  # One report from every shard's rows, complete or cut: misses, false flags and gaps by file name.
  python -m kernelgym.cli redteam --from-jsonl "$out"/redteam_*.jsonl > "$out/redteam_report.txt" 2>&1
  tail -n 60 "$out/redteam_report.txt"
fi
if want corpora; then
  timeout "${CORPORA_LIMIT_S:-480}" python launch/judge_v4_corpora.py "$out/corpora_${ENGINE:-replay}.jsonl" \
    --engine "${ENGINE:-replay}" --jobs "${JOBS:-12}" --only "${ONLY:-}" > "$out/corpora.log" 2>&1 || rc=1
  grep -v "^ok " "$out/corpora.log" | tail -n 60; echo "ok: $(grep -c '^ok ' "$out/corpora.log") of $(wc -l < "$out/corpora.log")"
fi
if want tests; then
  timeout "${TESTS_LIMIT_S:-$limit}" python -m pytest -m gpu -q -p no:randomly -rfE tests/judge tests/gpu > "$out/tests.log" 2>&1 || rc=1
  tail -n 30 "$out/tests.log"
fi
exit $rc
