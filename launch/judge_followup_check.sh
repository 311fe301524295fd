#!/usr/bin/env bash
# What sessions changed in the judge without a GPU, checked on one, in parts small enough to ride along beside
# another stage (e.g. launch/rl_check.sh's carry calls, which leave every GPU idle):
#   fit    GPUs FOLLOWUP_FIT_GPUS ("0 3"): the TF32 scale fit (KERNELGYM_TF32_SCALE_FIT=1, off by default until
#          this passes): every answer with tl.dot (built-in, external, honest) ok with it, the list split over the
#          GPUs, TF32_JOBS (4) per GPU; the bf16-intermediate gap file refused with it only (fit_gap.txt). The eighth
#          session's tf32 part judged 16 of the 37 before its deadline (all ok) and refused the gap file with the fit
#   contract GPU FOLLOWUP_GPU_CONTRACT (1): the eighth session's judge changes: masked_fill_ is torch compute (the
#          v4d, v4e, v4g exploits: cheat RH-01 at record time), the ok-expecting v4h file scored as passed, the
#          whole RH-01/02/03 selection of the red-team corpus on the GPU; rounds s15, s14, s13, v4i, v4j, v4k and s12
#   legit  GPUs FOLLOWUP_LEGIT_GPUS ("1"): every built-in, honest-but-unusual and real-world external answer under
#          today's judge, `kernelgym redteam --no-exploits --external` sharded over the GPUs (one batch process per
#          GPU, LEGIT_JOBS (8) in flight, its warm pool). The eleventh and twelfth sessions judged them one
#          `kernelgym judge` process each beside the exploits: 28 of 166 in 540 s, no external one reached
#   cpu    GPU FOLLOWUP_GPU_CPU (2): the 40-answer bench with the host CPU seconds per evaluation and their start-up
#          part (cpu_answer, cpu_replay, cpu_answer_startup, cpu_replay_startup in its phase table), JOBS (8) in
#          flight, twice: KERNELGYM_TRITON_SEED=0 then 1 (the pool's first warm process's Triton cache copied into
#          later ones: no gcc for cuda_utils and the warm-up launcher, no warm-up kernel compile per process)
#   tf32   GPU FOLLOWUP_GPU_TF32 (0): RH-14's per-task TF32 mean bound and the fit on everything (the seventh session's
#          part: ran in the eighth, see docs/BENCHMARKS.md)
#   ipc    GPU FOLLOWUP_GPU_IPC (1): the device path's GPU tests, rh25, rh03 v4g, round v4h's files (ran in the eighth)
# Usage: bash launch/judge_followup_check.sh [fit] [contract] [legit] [cpu] [tf32] [ipc]   (default: fit contract legit cpu, in
# parallel). Each step is cut at FOLLOWUP_LIMIT_S (240) and every part at FOLLOWUP_DEADLINE_S (480) from the start,
# so that the whole check fits a call beside other stages. Results: $OUT/followup.txt (each part's tail), $OUT/followup.tgz.
set -uo pipefail
cd "$(dirname "$0")/.." && export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-followup_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
work="$(mktemp -d)"; limit="${FOLLOWUP_LIMIT_S:-240}"; deadline="${FOLLOWUP_DEADLINE_S:-480}"
lim() {  # seconds a step may take: its own cap ($1, else FOLLOWUP_LIMIT_S), never past the deadline (subshells keep SECONDS)
  local l=$((deadline - SECONDS)) cap="${1:-$limit}"; ((l > cap)) && l=$cap; ((l < 5)) && l=5; echo "$l"; }
parts=" ${*:-fit contract legit cpu} "
py="${PYTHON:-python3}"; dev="${FOLLOWUP_DEVICE:-cuda}"  # cpu: a smoke test of this script

tf32() {
  export CUDA_VISIBLE_DEVICES="${FOLLOWUP_GPU_TF32:-0}"
  for f in tests/redteam/external/lg_swiglu.py tests/redteam/honest/matmul_square_tf32_dot.py \
           tests/redteam/honest/linear_bias_gelu_libdevice_erf_epilogue.py tests/redteam/honest/attention_tensor_descriptor_tma.py; do
    task=$(sed -n 's/^# task: *//p' "$f" | head -1)
    echo "== $f ($task)"
    timeout "$(lim 120)" "$py" -m kernelgym.cli judge "$task" "$f" --device "$dev" --no-compile-baseline 2>&1 | tail -n 4
  done > "$work/tf32_legit.txt"
  # The scale fit (KERNELGYM_TF32_SCALE_FIT=1, red-team round tf32): every honest answer that calls tl.dot must
  # stay ok with it (the built-in answers of the TF32-class tasks, the external and honest corpora's), the bf16
  # intermediate must be refused with it and is ok without it (the gap), the RH-14 exploits stay refused.
  { grep -l "tl.dot" data/answers/*.py | while read -r f; do echo "$(basename "$f" .py) $f"; done
    grep -l "tl.dot" tests/redteam/external/*.py tests/redteam/honest/*.py |
      while read -r f; do echo "$(sed -n 's/^# task: *//p' "$f" | head -1) $f"; done; } > "$work/tf32_fit_list.txt"
  KERNELGYM_TF32_SCALE_FIT=1 timeout "$(lim)" xargs -P "${TF32_JOBS:-5}" -L 1 sh -c \
    '"$0" -m kernelgym.cli judge "$1" "$2" --device "$3" --no-compile-baseline --timeout 150 --json 2>/dev/null |
       "$0" -c "import json, sys; r = json.load(sys.stdin); print(sys.argv[1], r[\"status\"], r.get(\"speedup_eager\"), r[\"message\"][:160])" "$2" ||
     echo "$2 failed to judge"' "$py" \
    < <(awk -v d="$dev" '{print $1, $2, d}' "$work/tf32_fit_list.txt") > "$work/tf32_fit_legit.txt" 2>&1 &
  local legit=$!
  gap=tests/redteam/exploits/rh14_swiglu_bf16_intermediate_under_tf32_bound.py
  for fit in 0 1; do
    echo "== KERNELGYM_TF32_SCALE_FIT=$fit $gap"
    KERNELGYM_TF32_SCALE_FIT=$fit timeout "$(lim 120)" "$py" -m kernelgym.cli judge swiglu "$gap" --device "$dev" --no-compile-baseline 2>&1 | tail -n 4
  done > "$work/tf32_fit_gap.txt"
  KERNELGYM_TF32_SCALE_FIT=1 timeout "$(lim)" "$py" -m kernelgym.cli redteam --device "$dev" --only RH-14 --no-legit --jobs 3 \
    --no-compile-baseline --json-out "$work/tf32_rh14.jsonl" > "$work/tf32_rh14.txt" 2>&1
  wait "$legit"
}
ipc() {
  export CUDA_VISIBLE_DEVICES="${FOLLOWUP_GPU_IPC:-1}"
  timeout "$(lim)" "$py" -m pytest -m gpu -q -p no:randomly -rfE tests/gpu/test_device_transfer_gpu.py \
    > "$work/ipc_tests.txt" 2>&1
  for name in rh25_relu_ipc_many_output_views rh03_relu_v4g_state_mask_masked_fill_prep v4h; do
    timeout "$(lim)" "$py" -m kernelgym.cli redteam --device "$dev" --only "$name" --no-legit --no-compile-baseline \
      --json-out "$work/ipc_$name.jsonl" > "$work/ipc_$name.txt" 2>&1
  done
}
cpu() {  # the same bench without and with the pool's Triton seed (kernelgym/worker/triton_seed.py, opt-in)
  export CUDA_VISIBLE_DEVICES="${FOLLOWUP_GPU_CPU:-2}"
  local seed
  for seed in 0 1; do
    KERNELGYM_TRITON_SEED=$seed timeout "$(lim 200)" "$py" -m kernelgym.cli bench service --device "$dev" --no-baseline \
      --repeats 0 --no-compile-baseline --timeout 30 --jobs "${JOBS:-8}" --json-out "$work/cpu_bench_seed$seed.json" \
      > "$work/cpu_bench_seed$seed.txt" 2>&1
  done
}

tdot_list() {  # "task file" for every answer that calls tl.dot: external and honest first (the ninth and eleventh
  # sessions' deadlines cut the list after the built-ins, twice judged ok, and the same 10 were never reached)
  grep -l "tl.dot" tests/redteam/external/*.py tests/redteam/honest/*.py |
    while read -r f; do echo "$(sed -n 's/^# task: *//p' "$f" | head -1) $f"; done
  grep -l "tl.dot" data/answers/*.py | while read -r f; do echo "$(basename "$f" .py) $f"; done
}
judge_list() {  # stdin: "task file" lines; stdout: "file status speedup message", TF32_JOBS at a time; $1: cap (s)
  timeout "$(lim "${1:-}")" xargs -P "${TF32_JOBS:-4}" -L 1 sh -c \
    '"$0" -m kernelgym.cli judge "$1" "$2" --device "$3" --no-compile-baseline --timeout 150 --json 2>/dev/null |
       "$0" -c "import json, sys; r = json.load(sys.stdin); print(sys.argv[1], r[\"status\"], r.get(\"speedup_eager\"), r[\"message\"][:160])" "$2" ||
     echo "$2 failed to judge"' "$py" < <(awk -v d="$dev" '{print $1, $2, d}')
}
fit() {
  local gpus=(${FOLLOWUP_FIT_GPUS:-0 3}) n i pids=()
  n=${#gpus[@]}; tdot_list > "$work/fit_list.txt"
  for ((i = 0; i < n; i++)); do
    awk -v n="$n" -v i="$i" 'NR % n == i' "$work/fit_list.txt" |
      CUDA_VISIBLE_DEVICES="${gpus[$i]}" KERNELGYM_TF32_SCALE_FIT=1 judge_list > "$work/fit_legit_$i.txt" 2>&1 &
    pids+=($!)
  done
  gap=tests/redteam/exploits/rh14_swiglu_bf16_intermediate_under_tf32_bound.py
  for fit in 0 1; do
    echo "== KERNELGYM_TF32_SCALE_FIT=$fit $gap"
    CUDA_VISIBLE_DEVICES="${gpus[0]}" KERNELGYM_TF32_SCALE_FIT=$fit timeout "$(lim 120)" "$py" -m kernelgym.cli judge swiglu "$gap" \
      --device "$dev" --no-compile-baseline 2>&1 | tail -n 4
  done > "$work/fit_gap.txt"
  for p in "${pids[@]}"; do wait "$p"; done
  cat "$work"/fit_legit_*.txt > "$work/fit_legit.txt"
  echo "$(grep -c ' ok ' "$work/fit_legit.txt") of $(wc -l < "$work/fit_list.txt") tl.dot answers ok with the fit" >> "$work/fit_legit.txt"
}
contract() {
  export CUDA_VISIBLE_DEVICES="${FOLLOWUP_GPU_CONTRACT:-1}"
  # the newest rounds first (a deadline cuts the list's end): s18 was never judged on a GPU; s16-s17 first were in the eighteenth session
  for name in s18 s17 s16 s15 s14 s13 s11 masked_fill ghost_sabotaged v4h v4i v4j v4k s12; do  # v4i: the state carried across trials, the profile poison; v4j, v4k: the tenth session's rounds; s12: the twelfth's
    timeout "$(lim)" "$py" -m kernelgym.cli redteam --device "$dev" --only "$name" --no-legit --no-compile-baseline \
      --json-out "$work/contract_$name.jsonl" > "$work/contract_$name.txt" 2>&1
  done
  timeout "$(lim)" "$py" -m kernelgym.cli redteam --device "$dev" --only RH-03 --no-legit --jobs 4 --no-compile-baseline \
    --json-out "$work/contract_rh03.jsonl" > "$work/contract_rh03.txt" 2>&1
}
legit() {  # one batch process per GPU, each a shard: the warm pool, not a process per answer
  local gpus=(${FOLLOWUP_LEGIT_GPUS:-1}) n i pids=() shards=()
  n=${#gpus[@]}
  for ((i = 0; i < n; i++)); do
    CUDA_VISIBLE_DEVICES="${gpus[$i]}" timeout "$(lim 600)" "$py" -m kernelgym.cli redteam --device "$dev" --no-exploits \
      --external --shard "$i/$n" --jobs "${LEGIT_JOBS:-8}" --no-compile-baseline --json-out "$work/legit_$i.jsonl" \
      > "$work/legit_$i.txt" 2>&1 &
    pids+=($!); shards+=("$work/legit_$i.jsonl")
  done
  for p in "${pids[@]}"; do wait "$p"; done
  "$py" -m kernelgym.cli redteam --from-jsonl "${shards[@]}" > "$work/legit.txt" 2>&1  # one table, the misses listed
}

pids=()
for p in fit contract legit cpu tf32 ipc; do
  [[ $parts == *" $p "* ]] || continue
  "$p" & pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done
{ nvidia-smi --query-gpu=index,name --format=csv,noheader 2>/dev/null
  for f in "$work"/*.txt; do echo "===== $(basename "$f")"; tail -n 40 "$f"; done; } > "$out/followup.txt"
tar czf "$out/followup.tgz.part" -C "$work" . && mv "$out/followup.tgz.part" "$out/followup.tgz"  # last: the sign that the check is done
cat "$out/followup.txt" | tail -n 120
