#!/usr/bin/env bash
# The whole GPU check in one call: GPU tests, every built-in answer judged at full size, and the
# judge benchmark, and the red-team corpus. Results land in ${OUT:-gpu_check_out}/.
# Usage: bash launch/gpu_check.sh [tests|run|bench|redteam|all]   (run = the legitimate corpus at full size)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-gpu_check_out}"; mkdir -p "$out"
stage="${1:-all}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
rc=0
if [[ $stage == tests || $stage == all ]]; then
  python -m pytest -m gpu -q -p no:cacheprovider tests/gpu tests/judge 2>&1 | tee "$out/gpu_tests.log" || rc=1
fi
if [[ $stage == run || $stage == all ]]; then
  python -m kernelgym.cli run --device cuda --jobs "${JOBS:-6}" ${RUN_ARGS:-} --json-out "$out/run.jsonl" 2>&1 | tee "$out/run.log" || rc=1
fi
if [[ $stage == bench || $stage == all ]]; then
  python -m kernelgym.cli bench judge --device cuda --repeats 10 --jobs "${JOBS:-6}" --no-compile-baseline \
    --json-out "$out/bench_judge.json" 2>&1 | tee "$out/bench.log" || rc=1
fi
if [[ $stage == redteam || $stage == all ]]; then
  python -m kernelgym.cli redteam --device cuda --no-legit ${REDTEAM_ARGS:-} --jobs "${JOBS:-6}" --no-compile-baseline \
    --json-out "$out/redteam.jsonl" 2>&1 | tee "$out/redteam.log" || rc=1
fi
exit $rc
