#!/usr/bin/env bash
# The replay's device path (CUDA IPC, kernelgym/judge/device_transfer.py) on one GPU in one call (< 5 min);
# results in ${OUT:-ipc_out}/.
#   1. the GPU tests of the device path (tests/gpu/test_device_transfer_gpu.py): used, and the same verdicts as the area
#   2. `kernelgym bench service` on the default mix, GPU 0, replay engine: --no-device-transfer ("area"), then
#      the device path ("device"); same flags as launch/judge_v4_check.sh's bench stage. Compare
#      correctness, timing, timing_inputs, timed_outputs, measure_hold and output_transfer, and evals/min;
#      every row's `transfer` in bench_device.json should read "device".
# The tests are cut at TESTS_LIMIT_S (default 70 s), each bench at STAGE_LIMIT_S (default 115 s): < 5 min in all.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
out="${OUT:-ipc_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
limit="${STAGE_LIMIT_S:-115}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$out/gpu.txt"
echo "nproc $(nproc) | cpu.max $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo n/a) | /dev/shm $(df -h /dev/shm | tail -1)" | tee -a "$out/gpu.txt"
rc=0
timeout "${TESTS_LIMIT_S:-70}" python -m pytest -m gpu -q -p no:randomly -rfE -s tests/gpu/test_device_transfer_gpu.py > "$out/tests.log" 2>&1 || rc=1
tail -n 25 "$out/tests.log"
for run in area device; do
  flag=""; [[ $run == area ]] && flag="--no-device-transfer"
  timeout "$limit" python -m kernelgym.cli bench service --device cuda --no-baseline --repeats 0 --no-compile-baseline \
    --timeout 30 --engine replay $flag ${BENCH_FLAGS:-} --json-out "$out/bench_$run.json" > "$out/bench_$run.log" 2>&1 || rc=1
  echo "== bench $run"; tail -n 30 "$out/bench_$run.log"
done
python - "$out" <<'PY' || true
import json, sys, collections
for run in ("area", "device"):
    try:
        d = json.load(open(f"{sys.argv[1]}/bench_{run}.json"))
    except (OSError, ValueError) as e:
        print(run, "no JSON:", e); continue
    rows = [r for m in d.get("modes", []) for r in m.get("details", [])]
    print(run, "transfer:", dict(collections.Counter(r.get("transfer", "?") for r in rows)))
PY
# Leftover CUDA IPC counter files of replay processes (killed ones do not unlink theirs).
echo "torch_* files in /dev/shm: $(ls /dev/shm 2>/dev/null | grep -c '^torch_')" | tee -a "$out/gpu.txt"
exit $rc
