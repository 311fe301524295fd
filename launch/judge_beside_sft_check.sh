#!/usr/bin/env bash
# Issue 26's judge checks on the GPU that SFT leaves free (a 2-GPU machine: SFT on GPU 0, these on GPU 1), detached
# (setsid) from a frozen copy of the tree so that they outlive the call that starts them:
#   1. the throughput run (launch/judge_throughput_check.sh, 16 in flight, N answers) whose archive gates RL
#      (launch/rl_detached.sh DETACHED_RL_GATE=$F/out/throughput.tgz; the archive appears whole, at its end);
#   2. `kernelgym redteam --device '${DEVICE:-cuda}' --no-legit --only $REDTEAM_ONLY`, stopped (SIGTERM, its workers exit on
#      the EOF) after REDTEAM_S seconds, so that none of it is on the GPU when RL's judging service starts there;
#      its --json-out lines are kept as far as it got (`kernelgym redteam --from-jsonl` reports on them).
# Usage: [GPU=1] [F=/tmp/fu] [N=48] [REDTEAM_ONLY=_s2] [REDTEAM_S=130] bash launch/judge_beside_sft_check.sh
# DEVICE=cpu: both on the CPU (the interpreter), to test this script without a GPU.
# Results in $F/out: throughput.txt, throughput.tgz, redteam.jsonl, redteam.log; $F/done once both have ended.
set -uo pipefail
cd "$(dirname "$0")/.."
f="${F:-/tmp/fu}"; rm -rf "$f"; mkdir -p "$f/out" "$f/tree"
cp -a kernelgym train rewards data launch configs tests pyproject.toml "$f/tree/" || { echo "could not copy the tree"; exit 1; }
cd "$f/tree" && CUDA_VISIBLE_DEVICES="${GPU:-1}" PYTHONPATH="$f/tree" setsid nohup bash -c "
  BENCH_DEVICE='${DEVICE:-cuda}' OUT='$f/out' RUNS=16x1 N='${N:-48}' RUN_LIMIT_S=150 DEADLINE_S=170 bash launch/judge_throughput_check.sh > '$f/throughput.log' 2>&1
  timeout ${REDTEAM_S:-130} '${PYTHON:-python3}' -m kernelgym.cli redteam --device '${DEVICE:-cuda}' --no-legit --only '${REDTEAM_ONLY:-_s2}' \
    --jobs 8 --no-compile-baseline --json-out '$f/out/redteam.jsonl' > '$f/out/redteam.log' 2>&1
  echo \"redteam exit \$?\" >> '$f/out/redteam.log'; touch '$f/done'" > "$f/log" 2>&1 < /dev/null &
echo "judge checks beside SFT: pid $! on GPU ${GPU:-1}, results in $f/out"
