#!/usr/bin/env bash
# Issue 26's throughput on ONE GPU, in one call: where an evaluation's time goes and what more concurrency buys.
# `kernelgym bench service` on the default mix (N answers, the BENCHMARKS flags) once per RUNS entry
# "jobs x workers" (evaluations in flight per worker process x worker processes on the GPU), one after another
# on the idle GPU, each with a fresh Triton cache (an RL step's answers are new code: nothing is cached).
# Each run reports evaluations/min, each worker process's own CPU share (1.0 = one core: its GIL is the
# bound), the host's load and, per answer kind, the median seconds and trusted-thread CPU per phase.
# A run "JOBSxWORKERS@SYNC" sets KERNELGYM_CUDA_SYNC (auto, the default: CUDA's spin-or-yield; or blocking);
# a suffix ":N" sets KERNELGYM_CANDIDATE_THREADS (torch's host threads per candidate process; default 1, 0: torch's
# own, one per core), e.g. RUNS="16x1:0 16x1" for before/after of the thread cap. CPU per request op and, of it,
# threads other than the main one by name ("~python3": torch's pool) are in the phase table's cpu line.
# Usage: [RUNS="8x1 16x1 8x2"] [N=48] [RUN_LIMIT_S=150] [DEADLINE_S=520] [BENCH_FLAGS=...] bash launch/judge_throughput_check.sh
# BENCH_DEVICE=cpu: a smoke test of this script on a CPU (interpreter).
# Each run also samples the host CPU of every kernelgym process by thread name (launch/thread_sampler.py: main
# threads apart from CUDA's, torch's and the driver's own), printed after the table.
# PROFILE_RUNS="16x1": those runs also get launch/stack_sampler.py: PROFILE_AFTER_S (25) into the run, the
# PROFILE_TOP (4) busiest kernelgym processes sampled by py-spy with native frames for PROFILE_FOR_S (15) s (py-spy
# pauses them per sample: the run's rate is not the judge's). py-spy: PY_SPY=path, or its wheel carried in .whl/prof
# (here, once: pip download --no-deps py-spy==0.4.3 -d .whl/prof; 2.9 MiB).
# Results: $OUT/throughput.txt (the table, CPU by thread, the phase medians), $OUT/throughput.tgz (reports and logs).
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-throughput_out}"; mkdir -p "$out"; out="$(cd "$out" && pwd)"
work="$(mktemp -d)"; deadline="${DEADLINE_S:-520}"; py="${PYTHON:-python3}"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  "$py" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  echo "nproc $(nproc) | cpu.max $(cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo n/a) | $(uptime)"
  git rev-parse HEAD 2>/dev/null || echo "no git history here"
  # the blocking-sync flag reaches the primary context (judge/cuda_sync.py): CU_CTX_SCHED_BLOCKING_SYNC is 4
  [[ ${BENCH_DEVICE:-cuda} == cuda ]] && "$py" - <<'PY'
import ctypes, torch
import os
os.environ["KERNELGYM_CUDA_SYNC"] = "blocking"
from kernelgym.judge.cuda_sync import use_blocking_sync
print("cuda_sync:", use_blocking_sync(0))
torch.zeros(1, device="cuda")
cuda, dev, flags, active = ctypes.CDLL("libcuda.so.1"), ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
cuda.cuDeviceGet(ctypes.byref(dev), 0)
cuda.cuDevicePrimaryCtxGetState(dev, ctypes.byref(flags), ctypes.byref(active))
print(f"primary context: flags {flags.value} (scheduling {flags.value & 7}), active {active.value}")
PY
} > "$work/machine.txt" 2>&1
pyspy="${PY_SPY:-}"
if [[ -z $pyspy && -n ${PROFILE_RUNS:-} ]] && compgen -G ".whl/prof/py_spy-*.whl" > /dev/null; then
  "$py" -m zipfile -e .whl/prof/py_spy-*.whl "$work/pyspy" && pyspy=$(find "$work/pyspy" -name py-spy -type f | head -1)
  [[ -n $pyspy ]] && chmod +x "$pyspy"
fi
[[ -n ${PROFILE_RUNS:-} && -z $pyspy ]] && echo "PROFILE_RUNS: no py-spy (PY_SPY, or carry .whl/prof): no stacks" >> "$work/runs.txt"
rc=0; i=0
for run in ${RUNS:-8x1 16x1 8x2}; do
  i=$((i + 1))  # a run may repeat (interleaved before/after): each keeps its own report
  threads=1; [[ $run == *:* ]] && threads=${run#*:}
  base=${run%%:*}; spec=${base%@*} sync=auto; [[ $base == *@* ]] && sync=${base#*@}
  jobs=${spec%x*} workers=${spec#*x}
  left=$((deadline - SECONDS)); lim=${RUN_LIMIT_S:-150}; ((left < lim)) && lim=$left
  if ((lim < 45)); then echo "$run: skipped, ${left} s left of DEADLINE_S=$deadline" >> "$work/runs.txt"; continue; fi
  t0=$SECONDS
  "$py" launch/thread_sampler.py "$work/threads_${i}_${run}.txt" "$lim" 2 > /dev/null & sampler=$!  # CPU by thread name
  stacks=""
  if [[ -n $pyspy && " ${PROFILE_RUNS:-} " == *" $run "* ]]; then  # where the busiest processes spend it, by stack
    "$py" launch/stack_sampler.py "$work/stacks_${i}_${run}.txt" --py-spy "$pyspy" --after "${PROFILE_AFTER_S:-25}" \
      --for "${PROFILE_FOR_S:-15}" --top "${PROFILE_TOP:-4}" > "$work/stacks_${i}_${run}.log" 2>&1 & stacks=$!
  fi
  KERNELGYM_CANDIDATE_THREADS=$threads KERNELGYM_CUDA_SYNC=$sync TRITON_CACHE_DIR="$(mktemp -d)" timeout -k 10 "$lim" "$py" -m kernelgym.cli bench service --device "${BENCH_DEVICE:-cuda}" --no-baseline \
    --repeats 0 --no-compile-baseline --timeout 30 --n "${N:-48}" --jobs "$jobs" --workers-per-device "$workers" \
    ${BENCH_FLAGS:-} --json-out "$work/bench_${i}_${run}.json" > "$work/bench_${i}_${run}.log" 2>&1
  code=$?; ((code)) && rc=1
  kill -TERM "$sampler" 2>/dev/null; wait "$sampler" 2>/dev/null
  [[ -n $stacks ]] && { wait "$stacks" || echo "$run: stack sampler failed: $(tail -1 "$work/stacks_${i}_${run}.log")" >> "$work/runs.txt"; }
  echo "$run: exit $code after $((SECONDS - t0)) s" >> "$work/runs.txt"
done
"$py" - "$work" > "$out/throughput.txt" 2>&1 <<'EOF'
import json, sys
from pathlib import Path

work = Path(sys.argv[1])
print((work / "machine.txt").read_text())
print((work / "runs.txt").read_text() if (work / "runs.txt").exists() else "no runs")
print(f"{'run':6} {'n':>3} {'wall s':>7} {'evals/min':>9} {'warm-up':>7} {'p50 s':>6} {'held':>5} {'kernel':>6} "
      f"{'worker CPU':>14} {'load':>5} {'unexpected':>10}  statuses")
phases = []
for path in sorted(work.glob("bench_*.json"), key=lambda p: p.stat().st_mtime):
    run = path.stem.removeprefix("bench_").split("_", 1)[1]
    for m in json.loads(path.read_text())["modes"]:
        share = " ".join(f"{v:.0%}" for v in (m.get("worker_cpu_share") or {}).values()) or "-"
        fmt = lambda x, s: "-" if x is None else format(x, s)
        print(f"{run:6} {m['n']:>3} {m['wall_s']:>7.1f} {m['evals_per_min']:>9.1f} {fmt(m.get('warmup_s'), '.1f'):>7} "
              f"{m['p50_latency_s']:>6.1f} {fmt(m.get('held_share'), '.0%'):>5} {fmt(m.get('kernel_busy_share'), '.0%'):>6} "
              f"{share:>14} {fmt(m.get('load_avg'), '.1f'):>5} {len(m['unexpected']):>10}  {m['statuses']}")
        for line in m["unexpected"]:
            print(f"{'':8}unexpected: {line[:160]}")
        for kind, med in (m.get("phase_medians") or {}).items():
            if kind in ("correct", "wrong_output"):
                phases.append((run, kind, med))
for path in sorted(work.glob("threads_*.txt"), key=lambda p: p.stat().st_mtime):
    print(f"\nhost CPU by thread, run {path.stem.removeprefix('threads_').split('_', 1)[1]}: " + path.read_text())
for path in sorted(work.glob("stacks_*.txt"), key=lambda p: p.stat().st_mtime):
    print(f"\nstacks, run {path.stem.removeprefix('stacks_').split('_', 1)[1]}: " + path.read_text())
print("\nmedian seconds per phase (wall), and the trusted thread's CPU (cpu_judge*), by run and answer kind")
for run, kind, med in phases:
    wall = {k: v for k, v in med.items() if not k.startswith("cpu_")}
    cpu = {k.removeprefix("cpu_"): v for k, v in med.items() if k.startswith("cpu_")}
    print(f"  {run} {kind}: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(wall.items())))
    print(f"  {run} {kind} cpu: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(cpu.items())))
EOF
# whole or not at all: a detached RL run waits for this file (rl_detached.sh DETACHED_RL_GATE)
tar czf "$out/throughput.tgz.part" -C "$work" . && mv "$out/throughput.tgz.part" "$out/throughput.tgz"
cat "$out/throughput.txt"
exit $rc
