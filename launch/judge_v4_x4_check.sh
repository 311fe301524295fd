#!/usr/bin/env bash
# Judge v4 on a 4-GPU host in one call (issue 26), everything cut so that it ends by DEADLINE_S (560) from the start:
#   GPU 0     (SOLO_GPU) launch/ptr_check.sh (the compiled-IR pointer rule), then `judge_v4_check.sh bench` of BENCH_TREES
#             (default "this:.": e.g. "main:t_main branch:." with `git archive main` unpacked in t_main/),
#             (with IPC=1: launch/ipc_check.sh, the device-transfer branch's tests and bench without/with it),
#             then launch/precision_probe.py, then the GPU tests with the time left
#   GPUs 1-3  (REDTEAM_GPUS, e.g. 2,3 while GPU 0 trains) `judge_v4_check.sh redteam`, one shard per GPU: first the legitimate answers (built-in, honest,
#             external: the false-flag side, ~2 min), then every exploit; one report over both
# GPU0_PARTS ("ptr bench probe tests") and REDTEAM_PASSES ("legit exploits") pick parts for a shorter call.
# The benches run beside the red-team shards (the host's CPUs are shared): compare trees within this call only.
# Results: $OUT/summary.txt (each part's tail) and $OUT/results.tgz (every file of every part).
set -uo pipefail
cd "$(dirname "$0")/.." && export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
out="${OUT:-judge_v4_x4_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
work="$(mktemp -d)"; deadline="${DEADLINE_S:-560}"; t0=$SECONDS
left() { echo $((deadline - (SECONDS - t0))); }
gpu0() {
  export CUDA_VISIBLE_DEVICES="${SOLO_GPU:-0}"
  local parts=" ${GPU0_PARTS:-ptr bench probe tests} "
  [[ $parts == *" ptr "* ]] && timeout 120 bash launch/ptr_check.sh > "$work/ptr.txt" 2>&1
  if [[ $parts != *" bench "* ]]; then :
  elif [[ -n ${IPC:-} ]]; then  # the device-transfer branch's own before/after (launch/ipc_check.sh) instead
    OUT="$work/ipc" STAGE_LIMIT_S="${BENCH_LIMIT_S:-190}" bash launch/ipc_check.sh > "$work/bench.txt" 2>&1
  else
    OUT="$work/bench" BENCH_TREES="${BENCH_TREES:-this:.}" STAGE_LIMIT_S="${BENCH_LIMIT_S:-190}" \
      bash launch/judge_v4_check.sh bench > "$work/bench.txt" 2>&1
  fi
  local t; t=$(( $(left) < 90 ? $(left) : 90 ))
  ((t > 10)) && [[ $parts == *" probe "* ]] && timeout "$t" python launch/precision_probe.py --device cuda > "$work/probe.txt" 2>&1
  t=$(( $(left) - 5 ))
  ((t > 30)) && [[ $parts == *" tests "* ]] && OUT="$work/tests" TESTS_LIMIT_S="$t" bash launch/judge_v4_check.sh tests > "$work/tests.txt" 2>&1
}
gpu0 &
redteam() {  # NAME FLAGS: one pass over the three GPUs, cut 20 s before the deadline
  OUT="$work/$1" REDTEAM_GPUS="${REDTEAM_GPUS:-1,2,3}" REDTEAM_LIMIT_S="$(( $(left) - 20 ))" REDTEAM_FLAGS="$2" JOBS="${JOBS:-8}" \
    bash launch/judge_v4_check.sh redteam > "$work/$1.txt" 2>&1
}
passes=" ${REDTEAM_PASSES:-legit exploits} "
{ [[ $passes == *" legit "* ]] && redteam legit --no-exploits
  [[ $passes == *" exploits "* ]] && redteam exploits --no-legit
  python -m kernelgym.cli redteam --from-jsonl $(ls "$work"/legit/redteam_*.jsonl "$work"/exploits/redteam_*.jsonl 2>/dev/null) \
    > "$work/redteam.txt" 2>&1; } &
wait
{ for f in ptr bench probe tests redteam; do echo "===== $f"; tail -n 80 "$work/$f.txt" 2>/dev/null; done
  echo "===== elapsed $((SECONDS - t0)) s"; } > "$out/summary.txt"
tar czf "$out/results.tgz" -C "$work" .
