#!/usr/bin/env bash
# Judge integrity on the GPU in one call: the red-team corpus (every exploit with all checks on, and
# with the static rules off where an exploit declares `expect_dynamic`), every honest answer (built-in
# and tests/redteam/honest/), then the judge benchmark; with BEFORE=<dir of an older checkout>, the
# same benchmark on that code for a before/after table. Results land in ${OUT:-redteam_check_out}/.
# Usage: bash launch/redteam_check.sh [redteam|bench|all]
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-redteam_check_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
stage="${1:-all}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
rc=0
if [[ $stage == redteam || $stage == all ]]; then
  python -m kernelgym.cli redteam --device cuda --jobs "${JOBS:-8}" --no-compile-baseline ${REDTEAM_ARGS:-} \
    --json-out "$out/redteam.jsonl" > "$out/redteam.log" 2>&1 || rc=1
  tail -n 60 "$out/redteam.log"
fi
if [[ $stage == bench || $stage == all ]]; then
  python -m kernelgym.cli bench judge --device cuda --repeats "${REPEATS:-5}" --no-compile-baseline \
    --json-out "$out/bench_judge_after.json" > "$out/bench_after.log" 2>&1 || rc=1
  tail -n 25 "$out/bench_after.log"
  if [[ -n ${BEFORE:-} && -d $BEFORE ]]; then
    (cd "$BEFORE" && PYTHONPATH="$PWD" python -m kernelgym.cli bench judge --device cuda --repeats "${REPEATS:-5}" \
      --no-compile-baseline --json-out "$out/bench_judge_before.json") > "$out/bench_before.log" 2>&1 || rc=1
    tail -n 25 "$out/bench_before.log"
  fi
fi
exit $rc
