#!/usr/bin/env bash
# The multi-GPU check (issue 19) on one host with N GPUs (N from nvidia-smi), in one call of ~540 s.
# Stages (STAGE=local,ray,nodes,train by default; a comma list picks some), each capped in time:
#   local  `kernelgym bench service` (the BENCHMARKS flags, n = PER_GPU answers per GPU) on GPU 0, on GPUs
#          0-1, then on all N GPUs: evaluations/min and each one's ratio against one GPU.
#   ray    a Ray head without GPUs and one launch/ray_worker.sh per GPU (CUDA_VISIBLE_DEVICES=g) on
#          127.0.0.1, `kernelgym serve --backend ray` by launch/ray_head.sh serve, the same mix over HTTP;
#          one Ray actor SIGKILLed mid-batch: no lost request, verdicts as expected, the actor replaced.
#   nodes  the multi-node path as a user starts it: the head on this host's address (`hostname -I`), two
#          worker groups with disjoint CUDA_VISIBLE_DEVICES joining it, the service on that address with
#          a token, MIN_GPUS=N; a smaller batch that both groups must judge.
#   train  `kernelgym serve` (launch/serve_node.sh) and `accelerate launch train/grpo.py` on N GPUs, DDP
#          (configs/accelerate/multi_gpu.yaml) then FSDP2 (fsdp.yaml), TRAIN_STEPS steps judged by that
#          service; the per-step time split; and turn advantages of rollout groups split across the real
#          ranks against the one-process result (tests/train/test_advantages.py's check, over NCCL).
#          Model: SmolLM2-135M-Instruct when its GGUF was carried (launch/smollm2_env.sh), else kernelgym:tiny.
# Results: $OUT/summary.json, $OUT/summary.txt, $OUT/logs.tgz (every log). Exit 0: every stage run passed.
#
# The GPU image lacks Ray, FastAPI/uvicorn/pydantic (the service) and TRL/datasets; carry them as wheels:
#   here, once:  bash launch/multigpu_check.sh prepare   # fills .whl/ray (git-ignored), ~50 MiB
#   kernelgym:tiny (one call):  carry .whl/ray .whl/train             -> ~56 MiB with the working tree
#   SmolLM2 (three calls, machine kept warm between them; the first two exit 3 after stashing):
#     1. carry .carry/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.part0
#     2. carry .carry/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.part1 .carry/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.sha256 .whl/train
#     3. carry .whl/ray .whl/train
# A call that lacks something prints "carry ... next" and exits 3 before any stage runs.
# Env: STAGE; DEVICES=gpu|cpu (cpu: CPU Ray workers and CPU judging, to test the script without a GPU;
#   NCPU of them, default 2); PER_GPU (40; cpu 2) answers per GPU for local and ray, NODES_PER_GPU (10; cpu 2);
#   JOBS (8) per worker; WARM_S (15): the ray stage's wait for the actors' warm pools; TRAIN_STEPS (3);
#   MODEL=auto|tiny|smollm2 (auto: smollm2 once its GGUF was carried); LOCAL_CAP_S (130) each local run's cap, RAY_CAP_S (200), NODES_CAP_S (150) those stages' (the cluster's start included); BUDGET_S (540): a stage that no
#   longer fits is skipped (summary: "skipped": "budget"; run it in a second call with STAGE=...);
#   RAY_PORT (6379), PORT (8123) of the services; WORK (/tmp/kgmc): scratch, deleted at the start.
set -uo pipefail
cd "$(dirname "$0")/.."
t_start=$SECONDS  # the budget counts from here: installing the wheels is part of the call
# Never NVLink multicast on these hosts (KINDS.md): inherited by every process started below, Ray's too.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# The VM's MemTotal starts small and grows as memory is used: Ray's memory monitor would kill actors early.
export RAY_memory_monitor_refresh_ms=0 PYTHONUNBUFFERED=1
PYTHON="${PYTHON:-python3}"; export PYTHON  # serve_env.sh starts the services with it

# Pinned to what the dev venv runs; ray without its Java jar (prepare removes ray/jars: 31 of its 79 MB;
# Ray runs Python workers without it). The rest are what the image lacks (KINDS.md's package list).
RAY_WHEELS=(ray==2.60.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
            fastapi==0.165.0 starlette==1.10.0 pydantic==2.14.3 pydantic-core==2.50.4 uvicorn==0.54.0
            annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0 opentelemetry-api==1.45.2)

prepare() {
  mkdir -p .whl/ray
  python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl/ray "${RAY_WHEELS[@]}" || return 1
  python3 - .whl/ray/ray-*.whl <<'PY' || return 1
import os, sys, zipfile
src = sys.argv[1]
with zipfile.ZipFile(src) as z:
    if not any(n.startswith("ray/jars/") for n in z.namelist()):
        sys.exit(0)
    with zipfile.ZipFile(src + ".tmp", "w", zipfile.ZIP_DEFLATED) as out:
        for info in z.infolist():
            if info.filename.startswith("ray/jars/"):
                continue
            data = z.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                data = b"".join(l for l in data.splitlines(True) if not l.startswith(b"ray/jars/"))
            out.writestr(info, data)  # keeps each entry's mode bits (gcs_server, raylet stay executable)
os.replace(src + ".tmp", src)
PY
  du -sh .whl/ray
}
if [[ ${1:-} == prepare ]]; then prepare; exit $?; fi

mode="${DEVICES:-gpu}"
[[ $mode == gpu || $mode == cpu ]] || { echo "DEVICES must be gpu or cpu, not $mode" >&2; exit 2; }
unset DEVICES  # serve_env.sh reads DEVICES as `kernelgym serve --devices`: set per command below
stages=",${STAGE:-local,ray,nodes,train},"
want() { [[ $stages == *",$1,"* ]]; }
out="${OUT:-multigpu_check_out}"; mkdir -p "$out"
work="${WORK:-/tmp/kgmc}"; rm -rf "$work"; mkdir -p "$work/logs" "$work/py"
rt="$work/r"  # RAY_TMPDIR of the Ray stages; MULTIGPU_CHECK_RUN=$rt marks their processes for ray_down
jobs="${JOBS:-8}" warm_s="${WARM_S:-15}" ray_port="${RAY_PORT:-6379}" port="${PORT:-8123}" steps="${TRAIN_STEPS:-3}"
unset JOBS PORT  # likewise read by serve_env.sh
budget="${BUDGET_S:-540}"
if [[ $mode == gpu ]]; then
  n_dev=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); per="${PER_GPU:-40}"; per_nodes="${NODES_PER_GPU:-10}"
  ((n_dev)) || { echo "nvidia-smi lists no GPU (DEVICES=cpu runs the stages on CPU workers)" >&2; exit 2; }
else
  n_dev="${NCPU:-2}"; per="${PER_GPU:-2}"; per_nodes="${NODES_PER_GPU:-2}"
  export TRITON_INTERPRET=1  # CPU judging runs Triton in its interpreter (the Ray actors inherit it)
fi

# --- what the image lacks: installed, or stashed, before any stage runs ------------------------------
ray_site=/tmp/kernelgym_ray_site ray_missing=0 use_site=0
if want ray || want nodes || want train; then  # Ray and the service's packages; a dev venv has them
  if ! "$PYTHON" -c "import ray, fastapi, uvicorn, pydantic" 2>/dev/null; then
    if [[ ! -f $ray_site/.kernelgym_wheels && -d .whl/ray ]]; then
      "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$ray_site" \
        .whl/ray/*.whl || exit 1
      touch "$ray_site/.kernelgym_wheels"
    fi
    use_site=1
    [[ -f $ray_site/.kernelgym_wheels ]] || { echo "carry .whl/ray next (made here by: bash launch/multigpu_check.sh prepare)"; ray_missing=1; }
  fi
fi
source launch/smollm2_env.sh
model="${MODEL:-auto}"
want train || model="-"
if [[ $model == auto ]]; then
  model=tiny
  if [[ -f $stash/$gguf ]] || compgen -G ".carry/smollm2/$gguf.part*" >/dev/null; then model=smollm2; fi
fi
if want train; then  # _carry_gguf and _train_wheels print what to carry next and return 3
  if [[ $model == smollm2 ]]; then
    _carry_gguf "$gguf" .carry/smollm2 2 || exit $?
    export KERNELGYM_SMOLLM2_GGUF="$stash/$gguf"
  fi
  if ! "$PYTHON" -c "import trl, datasets" 2>/dev/null; then _train_wheels || exit $?; fi
fi
((ray_missing)) && exit 3
((use_site)) && export PYTHONPATH="$ray_site${PYTHONPATH:+:$PYTHONPATH}" PATH="$ray_site/bin:$PATH"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

# --- helpers ----------------------------------------------------------------------------------------
cap_for() {  # CAP [RESERVE]: CAP seconds, or what is left of the budget less RESERVE (20 s: the summary); 0: skip
  local left=$((budget - (SECONDS - t_start) - ${2:-20}))
  if ((left < 30)); then echo 0; elif ((left < $1)); then echo "$left"; else echo "$1"; fi
}
capped() {  # CAP LOG CMD...: CMD in a process group of its own, stopped after CAP s; what it leaves is killed
  local cap=$1 log=$2; shift 2
  setsid -w timeout -k 10 "$cap" "$@" >"$log" 2>&1 &
  local pid=$! rc
  wait "$pid"; rc=$?
  kill -KILL -- "-$pid" 2>/dev/null
  return "$rc"
}
stop_group() {  # PID: SIGTERM to the process group PID leads (a service shuts down cleanly), SIGKILL after 20 s
  kill -TERM -- "-$1" 2>/dev/null
  for _ in $(seq 20); do kill -0 "$1" 2>/dev/null || break; sleep 1; done
  kill -KILL -- "-$1" 2>/dev/null
}
ray_down() {  # NAME: keep the Ray session's logs, then kill every process started with this check's
  local p pids=()   # marker in its environment (Ray's daemons, agents and workers, the service), by pid
  if [[ -d $rt/ray/session_latest/logs ]]; then
    (cd "$rt/ray/session_latest" && find logs -type f -size -4M -print0 | tar czf "$work/logs/ray_$1.tgz" --null -T -)
  fi
  for p in /proc/[0-9]*; do
    grep -qzxF "MULTIGPU_CHECK_RUN=$rt" "$p/environ" 2>/dev/null && pids+=("${p#/proc/}")
  done
  # and their descendants: Ray's agents retitle themselves over their environment, so only their parent shows
  local parents=" ${pids[*]} " child parent line
  for _ in 1 2 3; do
    for p in /proc/[0-9]*; do  # /proc/PID/stat: "PID (name) STATE PPID ..." (no `ps` needed)
      read -r line <"$p/stat" 2>/dev/null || continue
      child=${p#/proc/}; line=${line##*) }; line=${line#* }; parent=${line%% *}
      [[ $parents == *" $parent "* && $parents != *" $child "* ]] && { pids+=("$child"); parents+="$child "; }
    done
  done
  ((${#pids[@]})) && kill -KILL "${pids[@]}" 2>/dev/null
  sleep 2
  rm -rf "$rt"
}
note() { echo "[$(date +%T) +$((SECONDS - t_start))s] $*"; }
skip() { note "$1: skipped, the budget is spent"; echo "budget" > "$work/$1.skipped"; }
worker_env() {  # FIRST COUNT: the environment of a Ray worker group that owns GPUs FIRST..FIRST+COUNT-1
  if [[ $mode == gpu ]]; then
    echo "CUDA_VISIBLE_DEVICES=$(seq -s, "$1" $(($1 + $2 - 1))) NUM_GPUS=$2"
  else
    echo "CUDA_VISIBLE_DEVICES= NUM_GPUS=0 NUM_CPUS=$2"
  fi
}
# The service's actors: one per GPU (gpu), or one per CPU worker (a number of CPU actors).
serve_devices=$([[ $mode == gpu ]] && echo gpu || echo "$n_dev")
min_gpus=$([[ $mode == gpu ]] && echo "$n_dev" || echo 0)
head_env="NUM_GPUS=0$([[ $mode == cpu ]] && echo " NUM_CPUS=0")"  # the head holds no actor

ray_down stale  # what an interrupted earlier run with this WORK left behind

# --- the Python pieces (written out so that each stage's log says what ran) ---------------------------
cat > "$work/py/http_bench.py" <<'PY'
"""Judge `kernelgym bench service`'s mixed batch through a running `kernelgym serve` over HTTP; with
--kill, SIGKILL one Ray actor process of this check (marked by MULTIGPU_CHECK_RUN) once the batch runs."""
import argparse, collections, json, os, signal, time
from kernelgym.service.bench import _mode_report  # the verdict check `kernelgym bench service` uses
from kernelgym.service.bench_mix import build_mix
from kernelgym.service.client import KernelGymClient

p = argparse.ArgumentParser()
p.add_argument("--url"); p.add_argument("--n", type=int); p.add_argument("--actors", type=int)
p.add_argument("--kill", action="store_true")
p.add_argument("--warm", type=float, default=15.0); p.add_argument("--timeout", type=float, default=30.0)
p.add_argument("--json"); p.add_argument("--pid", type=int, help="the service's process: stop waiting if it exits")
a = p.parse_args()


def stat(pid):  # (state, parent pid) from /proc/PID/stat
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1])


def running(pid):
    try:
        return stat(pid)[0] != "Z"
    except OSError:
        return False


client = KernelGymClient(a.url, token=os.environ.get("KERNELGYM_TOKEN"), timeout=60)
t_up = time.time()
while True:  # the service answers and every actor is ready
    try:
        backend = client.health().get("backend", {})
        if backend.get("actors_alive", 0) >= a.actors:
            break
    except Exception:
        pass
    if a.pid and not running(a.pid):
        raise SystemExit("the service exited before its actors were ready: see its log")
    if time.time() - t_up > 240:
        raise SystemExit(f"the service at {a.url} had no {a.actors} ready actors after 240 s")
    time.sleep(1)
up_s = time.time() - t_up
time.sleep(a.warm)  # the actors fill their warm pools (~10 s on an H200); HTTP does not say when they are full
items = build_mix(a.n, seed=0)
reqs = [{"task_id": it.task_id, "answer": it.answer,
         "config": {"seed": 10_000 + i, "timeout_s": a.timeout, "time_compile_baseline": False}}
        for i, it in enumerate(items)]
t0 = time.time()
ids = client.submit(reqs).ids
killed = None
if a.kill:  # once every actor has work in flight: whichever is killed loses some. Not "once an answer is
    # done" too: an actor's concurrent answers finish within a poll of each other, so that window can be empty.
    while True:
        done = sum(r.final for r in client.wait(ids, timeout=0))
        health = client.health()
        in_flight, workers = health["in_flight"], health["backend"]["workers"]
        if done == len(ids) or (len(workers) >= a.actors and all(w["in_flight"] for w in workers)):
            break
        time.sleep(0.1)
    mark = f"MULTIGPU_CHECK_RUN={os.environ['MULTIGPU_CHECK_RUN']}".encode()
    actors = []
    for pid in (int(d) for d in os.listdir("/proc") if d.isdigit()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                title = f.read().split(b"\0")[0]
            with open(f"/proc/{pid}/environ", "rb") as f:
                ours = mark in f.read().split(b"\0")
        except OSError:
            continue
        if ours and title.startswith(b"ray::EvaluatorActor"):
            actors.append(pid)
    actors = [pid for pid in actors if stat(pid)[1] not in actors]  # not a process an actor forked
    if actors and done < len(ids):
        os.kill(min(actors), signal.SIGKILL)
        killed = {"pid": min(actors), "at_s": round(time.time() - t0, 1), "done_then": done,
                  "in_flight_then": in_flight, "actor_processes_seen": len(actors)}
records = client.wait(ids, timeout=max(60.0, 8 * a.timeout + a.n * 3))
t1 = max((r.finished_at or time.time()) for r in records)
results = [r.result for r in records]
mode = _mode_report("http", items, results, [(r.finished_at or t1) - r.created_at for r in records], t1 - t0, None)
for _ in range(120):  # a killed actor is replaced: wait (bounded) until every actor is back
    backend = client.health().get("backend", {})
    if not killed or (backend.get("restarts", 0) >= 1 and backend.get("actors_alive", 0) >= a.actors):
        break
    time.sleep(1)
report = {
    "n": a.n, "wall_s": round(t1 - t0, 1), "evals_per_min": round(mode.evals_per_min, 1),
    "p50_s": round(mode.percentile(0.5), 1), "p95_s": round(mode.percentile(0.95), 1),
    "actors_up_s": round(up_s, 1), "warm_wait_s": a.warm, "statuses": mode.statuses,
    "crash_cost_s": mode.crash_cost_s, "unexpected": mode.unexpected,
    "lost": sum(not r.final for r in records), "retried": sum(r.attempts > 1 for r in records),
    "per_worker": dict(collections.Counter(r.worker for r in records)), "killed": killed,
    "restarts": backend.get("restarts"), "actors_alive_after": backend.get("actors_alive"),
    "nodes": backend.get("nodes"), "gpu_model": backend.get("gpu_model"),
    "workers": [{k: w.get(k) for k in ("name", "device", "node", "done", "restarts", "alive")}
                for w in backend.get("workers", [])],
}
with open(a.json, "w") as f:
    json.dump(report, f, indent=1)
print(json.dumps({k: report[k] for k in ("n", "wall_s", "evals_per_min", "statuses", "lost", "retried", "killed")}))
PY

cat > "$work/py/adv_check.py" <<'PY'
"""Turn advantages of rollout groups split across the real ranks (NCCL on GPUs) against the result of
one process over the whole batch: tests/train/test_advantages.py's check with accelerate's real gather."""
import json, sys
import torch
from accelerate import Accelerator
from train.advantages import ADVANTAGE_MODES, turn_advantages
from train.trainer import global_turn_advantages, turn_tensors

acc = Accelerator()
world, rank, per_rank, max_turns = acc.num_processes, acc.process_index, 3, 3
rng = torch.Generator().manual_seed(0)  # the same rollouts on every rank
rows = [[{"reward": int(torch.randint(0, 5, (1,), generator=rng)) / 4, "passed": False, "prs_keep_prob": 0.0}
         for _ in range(int(torch.randint(1, max_turns + 1, (1,), generator=rng)))] for _ in range(world * per_rank)]
whole = turn_tensors(rows, max_turns)
mine = {k: v.to(acc.device) for k, v in turn_tensors(rows[rank * per_rank:(rank + 1) * per_rank], max_turns).items()}
diffs = {}
for mode in ADVANTAGE_MODES:
    for size in (2, world * per_rank):  # groups of 2 straddle ranks of 3 rollouts; one group over every rank
        got = global_turn_advantages(mine, acc.gather, rank, size, mode, 1.0, scale=True)
        want = turn_advantages(mode, whole["reward"], whole["reached"], torch.arange(world * per_rank) // size,
                               scale=True)[rank * per_rank:(rank + 1) * per_rank]
        diffs[f"{mode}/group{size}"] = float((got.cpu().double() - want.double()).abs().max())
worst = float(acc.gather(torch.tensor([max(diffs.values())], device=acc.device)).max())
plugin = getattr(acc.state, "fsdp_plugin", None)
if acc.is_main_process:
    report = {"processes": world, "device": str(acc.device), "distributed_type": str(acc.distributed_type),
              "fsdp_version": getattr(plugin, "fsdp_version", None) if plugin is not None else None,
              "max_abs_diff": worst, "rank0": diffs, "ok": worst < 1e-6 and world > 1}
    with open(sys.argv[1], "w") as f:
        json.dump(report, f, indent=1)
    print(json.dumps(report))
PY

cat > "$work/py/summary.py" <<'PY'
"""The check's summary from what its stages left in WORK: summary.json and (stdout) summary.txt."""
import ast, json, re, sys
from pathlib import Path

work, mode, n_dev, model, elapsed, out = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), Path(sys.argv[6])


def load(name):
    p = work / name
    return json.loads(p.read_text()) if p.exists() else None


def rc(name):
    p = work / f"{name}.rc"
    return int(p.read_text()) if p.exists() else None


def skipped(name):
    p = work / f"{name}.skipped"
    return p.read_text().strip() if p.exists() else None


stages, lines = {}, [f"multi-GPU check: {mode}, {n_dev} device(s), model {model}, {elapsed} s"]
lines.append((work / "env.txt").read_text().strip() if (work / "env.txt").exists() else "")

runs = {}
for g in sorted({c for c in (1, 2, n_dev) if c <= n_dev}):
    r, m = load(f"local_{g}.json"), None
    if r:
        m = r["modes"][0]
        runs[g] = {"devices": g, "n": m["n"], "wall_s": round(m["wall_s"], 1), "evals_per_min": round(m["evals_per_min"], 1),
                   "warmup_s": m["warmup_s"] and round(m["warmup_s"], 1), "p50_s": round(m["p50_latency_s"], 1),
                   "p95_s": round(m["p95_latency_s"], 1), "crash_cost_s": m["crash_cost_s"],
                   "unexpected": m["unexpected"], "statuses": m["statuses"], "gpu": r.get("gpu_name")}
    elif rc(f"local_{g}") is not None or skipped(f"local_{g}"):
        runs[g] = {"devices": g, "rc": rc(f"local_{g}"), "skipped": skipped(f"local_{g}")}
if runs:
    one = runs.get(1, {})
    ratios = {g: r["evals_per_min"] / one["evals_per_min"] for g, r in runs.items()
              if g > 1 and "evals_per_min" in r and "evals_per_min" in one}
    ratio = ratios.get(n_dev)
    stages["local"] = {"runs": list(runs.values()), "ratio": ratio and round(ratio, 2),
                       "of_linear": ratio and round(ratio / n_dev, 2),
                       "ratios": {str(g): round(x, 2) for g, x in ratios.items()},
                       "ok": all("evals_per_min" in r and not r["unexpected"] for r in runs.values())}
    for r in runs.values():
        lines.append(f"local {r['devices']} device(s): " + (f"n={r['n']} {r['evals_per_min']}/min wall {r['wall_s']} s warm-up {r['warmup_s']} s "
                     f"p50/p95 {r['p50_s']}/{r['p95_s']} s crash {r['crash_cost_s']} unexpected {len(r['unexpected'])}"
                     if "evals_per_min" in r else f"no result (rc {r.get('rc')}, {r.get('skipped') or 'see logs/local_*.log'})"))
    for g, x in sorted(ratios.items()):
        lines.append(f"local: {g} devices / one = {x:.2f}x ({x / g:.0%} of linear)")

for name in ("ray", "nodes"):
    r = load(f"{name}.json")
    if r is None:
        if rc(name) is not None or skipped(name):
            stages[name] = {"ok": False if rc(name) else None, "rc": rc(name), "skipped": skipped(name)}
            lines.append(f"{name}: no result (rc {rc(name)}, {skipped(name) or 'see logs/' + name + '_*.log'})")
        continue
    ok = r["lost"] == 0 and not r["unexpected"] and r["actors_alive_after"] == n_dev
    if name == "ray":  # the kill hit an actor with work, whose jobs were judged again elsewhere
        ok = ok and r["killed"] is not None and (r["restarts"] or 0) >= 1 and r["retried"] >= 1
    else:  # both worker groups judged: by GPU index on GPUs, by distinct workers on CPU
        half = n_dev // 2
        served = {int(g) for w in r["per_worker"] for g in re.findall(r"gpu([\d,]+)", w) for g in g.split(",")}
        groups = ([bool(served & set(range(half))), bool(served & set(range(half, n_dev)))] if mode == "gpu"
                  else [len(r["per_worker"]) >= 2])
        r["both_groups_judged"] = all(groups)
        ok = ok and all(groups) and r["nodes"] == 3
    r["ok"] = ok
    stages[name] = r
    lines.append(f"{name}: n={r['n']} {r['evals_per_min']}/min wall {r['wall_s']} s p50/p95 {r['p50_s']}/{r['p95_s']} s "
                 f"lost {r['lost']} retried {r['retried']} unexpected {len(r['unexpected'])} restarts {r['restarts']} "
                 f"nodes {r['nodes']} killed {r['killed']} per worker {r['per_worker']} -> {'ok' if ok else 'FAILED'}")
if "local" in stages and "ray" in stages and stages["ray"].get("evals_per_min"):
    base = next((x for x in stages["local"]["runs"] if x["devices"] == n_dev and "evals_per_min" in x), None)
    if base:
        stages["ray"]["vs_local"] = round(stages["ray"]["evals_per_min"] / base["evals_per_min"], 2)
        lines.append(f"ray / local on {n_dev} devices: {stages['ray']['vs_local']}x (the ray run includes the kill)")

keys = ("timing/step_s", "timing/rollout_s", "timing/generate_s", "timing/judge_s", "timing/update_s", "reward", "masked/total")
train = {}
for kind in ("ddp", "fsdp"):
    st, log = work / f"train_{kind}" / "trainer_state.json", work / "logs" / f"train_{kind}.log"
    if st.exists():
        history = json.loads(st.read_text())["log_history"]
    else:  # no state saved (the run failed at its end): the dicts the trainer printed per step
        history = [dict(ast.literal_eval(m), step=i + 1) for i, m in enumerate(
            re.findall(r"\{'loss'.*?\}", log.read_text(errors="replace") if log.exists() else ""))]
    steps = [{"step": h["step"], **{k.split("/")[-1]: h.get(k) and float(h[k]) for k in keys}}
             for h in history if "timing/step_s" in h]
    adv = load(f"adv_{kind}.json")
    if rc(f"train_{kind}") is None and not steps and adv is None and not skipped(f"train_{kind}"):
        continue
    train[kind] = {"rc": rc(f"train_{kind}"), "skipped": skipped(f"train_{kind}"), "steps": steps, "advantages": adv,
                   "ok": rc(f"train_{kind}") == 0 and len(steps) > 0 and bool(adv and adv["ok"])}
    lines.append(f"train {kind}: rc {rc(f'train_{kind}')}, {len(steps)} step(s) logged; advantages split over ranks: "
                 + (f"max |diff| {adv['max_abs_diff']:.1e} on {adv['processes']} processes ({adv['distributed_type']}, "
                    f"fsdp {adv['fsdp_version']}) -> {'ok' if adv['ok'] else 'FAILED'}" if adv else f"no result (rc {rc(f'adv_{kind}')})"))
    for s in steps:
        lines.append("  step {step}: step {step_s:.1f} s = rollout {rollout_s:.1f} (generate {generate_s:.1f}, judge {judge_s:.1f}) "
                     "+ update {update_s:.1f}; reward {reward:.3f}".format(**{k: (v if v is not None else float("nan")) for k, v in s.items()}))
if train or rc("train") is not None or skipped("train"):
    stages["train"] = {"model": model, "runs": train, "rc": rc("train"), "skipped": skipped("train"),
                       "ok": bool(train) and all(t["ok"] for t in train.values())}

summary = {"mode": mode, "devices": n_dev, "elapsed_s": elapsed, "env": lines[1], "stages": stages,
           "ok": bool(stages) and all(s.get("ok") for s in stages.values())}
(out / "summary.json").write_text(json.dumps(summary, indent=1))
lines.append(f"all stages ok: {summary['ok']}")
print("\n".join(lines))
sys.exit(0 if summary["ok"] else 1)
PY

# --- stages -----------------------------------------------------------------------------------------
note "machine: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | xargs) mode=$mode devices=$n_dev model=$model"
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null
  "$PYTHON" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  "$PYTHON" -c "import ray, fastapi; print('ray', ray.__version__, 'fastapi', fastapi.__version__)" 2>/dev/null
  "$PYTHON" -c "import trl, accelerate; print('trl', trl.__version__, 'accelerate', accelerate.__version__)" 2>/dev/null
} > "$work/env.txt" 2>&1

local_counts() { printf '%s\n' 1 2 "$n_dev" | awk -v n="$n_dev" '$1 <= n' | sort -un; }  # 1, 2 and every GPU
stage_local() {  # one GPU, two, then all
  local g cap n visible
  for g in $(local_counts); do
    [[ $mode == cpu && $g != 1 ]] && continue  # one CPU worker either way: nothing to compare
    cap=$(cap_for "${LOCAL_CAP_S:-130}"); ((cap)) || { skip "local_$g"; continue; }
    n=$((per * g)); visible=$(seq -s, 0 $((g - 1)))
    note "local: bench service on $g device(s), n=$n (cap ${cap}s)"
    capped "$cap" "$work/logs/local_$g.log" env CUDA_VISIBLE_DEVICES="$visible" "$PYTHON" -m kernelgym.cli bench service \
      --device "$([[ $mode == gpu ]] && echo cuda || echo cpu)" --n "$n" --jobs "$jobs" --no-baseline --repeats 0 \
      --no-compile-baseline --timeout 30 --json-out "$work/local_$g.json"
    echo $? > "$work/local_$g.rc"
  done
}

stage_ray() {  # head + one worker per GPU on 127.0.0.1; the bench over HTTP with one actor killed
  local cap g serve_pid t_stage=$SECONDS; cap=$(cap_for "${RAY_CAP_S:-200}"); ((cap)) || { skip ray; return; }
  note "ray: head + $n_dev workers on 127.0.0.1, serve, n=$((per * n_dev)), one actor killed (cap ${cap}s)"
  local log="$work/logs/ray_cluster.log" ray_env=(RAY_TMPDIR="$rt" MULTIGPU_CHECK_RUN="$rt" KERNELGYM_CACHE_DIR="$work/cache_ray")
  env "${ray_env[@]}" NODE_IP=127.0.0.1 $head_env RAY_PORT="$ray_port" bash launch/ray_head.sh start >>"$log" 2>&1 \
    || { echo 1 > "$work/ray.rc"; ray_down ray; return; }
  for ((g = 0; g < n_dev; g++)); do
    env "${ray_env[@]}" RAY_HEAD="127.0.0.1:$ray_port" NODE_IP=127.0.0.1 WAIT_S=60 $(worker_env "$g" 1) \
      bash launch/ray_worker.sh >>"$log" 2>&1
  done
  setsid env "${ray_env[@]}" HOST=127.0.0.1 PORT="$port" DB="$work/ray.db" JOBS="$jobs" DEVICES="$serve_devices" \
    MIN_GPUS="$min_gpus" WAIT_S=60 RAY_ADDRESS="127.0.0.1:$ray_port" bash launch/ray_head.sh serve \
    >"$work/logs/ray_serve.log" 2>&1 &
  serve_pid=$!
  # The cluster's start (70 s on a 4 x H200 host) came out of the stage's cap: the bench gets what is
  # left, less the teardown (stop_group and ray_down: up to ~30 s), or the call outlives its limit.
  cap=$(cap_for $((cap - (SECONDS - t_stage) - 30)) 50)
  note "ray: cluster up, the service starting (bench cap ${cap}s)"
  ((cap)) || { skip ray; stop_group "$serve_pid"; ray_down ray; return; }
  capped "$cap" "$work/logs/ray_bench.log" env MULTIGPU_CHECK_RUN="$rt" "$PYTHON" "$work/py/http_bench.py" \
    --url "http://127.0.0.1:$port" --n $((per * n_dev)) --actors "$n_dev" --warm "$warm_s" --kill --pid "$serve_pid" \
    --json "$work/ray.json"
  echo $? > "$work/ray.rc"
  note "ray: batch done, stopping"
  stop_group "$serve_pid"; ray_down ray
}

stage_nodes() {  # two "nodes" (worker groups with disjoint GPUs) joining the head over the network interface
  local cap ip token half serve_pid t_stage=$SECONDS; cap=$(cap_for "${NODES_CAP_S:-150}"); ((cap)) || { skip nodes; return; }
  ((n_dev >= 2)) || { note "nodes: needs 2 devices"; echo "one device" > "$work/nodes.skipped"; return; }
  ip=$(hostname -I | awk '{print $1}'); ip="${ip:-127.0.0.1}"; token=$("$PYTHON" -c "import secrets; print(secrets.token_hex(16))")
  half=$((n_dev / 2))
  note "nodes: head on $ip, groups of $half and $((n_dev - half)) devices, n=$((per_nodes * n_dev)) (cap ${cap}s)"
  local log="$work/logs/nodes_cluster.log" ray_env=(RAY_TMPDIR="$rt" MULTIGPU_CHECK_RUN="$rt" KERNELGYM_CACHE_DIR="$work/cache_nodes")
  env "${ray_env[@]}" NODE_IP="$ip" $head_env RAY_PORT="$ray_port" bash launch/ray_head.sh start >>"$log" 2>&1 \
    || { echo 1 > "$work/nodes.rc"; ray_down nodes; return; }
  env "${ray_env[@]}" RAY_HEAD="$ip:$ray_port" NODE_IP="$ip" WAIT_S=60 $(worker_env 0 "$half") \
    bash launch/ray_worker.sh >>"$log" 2>&1
  env "${ray_env[@]}" RAY_HEAD="$ip:$ray_port" NODE_IP="$ip" WAIT_S=60 $(worker_env "$half" $((n_dev - half))) \
    bash launch/ray_worker.sh >>"$log" 2>&1
  setsid env "${ray_env[@]}" HOST="$ip" PORT="$port" DB="$work/nodes.db" JOBS="$jobs" TOKEN="$token" \
    DEVICES="$serve_devices" MIN_GPUS="$min_gpus" WAIT_S=60 bash launch/ray_head.sh serve \
    >"$work/logs/nodes_serve.log" 2>&1 &
  serve_pid=$!
  cap=$(cap_for $((cap - (SECONDS - t_stage) - 30)) 50)  # as in the ray stage: the cluster's start and the teardown come out of the cap
  ((cap)) || { skip nodes; stop_group "$serve_pid"; ray_down nodes; return; }
  capped "$cap" "$work/logs/nodes_bench.log" env MULTIGPU_CHECK_RUN="$rt" KERNELGYM_TOKEN="$token" "$PYTHON" \
    "$work/py/http_bench.py" --url "http://$ip:$port" --n $((per_nodes * n_dev)) --actors "$n_dev" \
    --warm 5 --pid "$serve_pid" --json "$work/nodes.json"
  echo $? > "$work/nodes.rc"
  note "nodes: batch done, stopping"
  stop_group "$serve_pid"; ray_down nodes
}

launcher() {  # ddp|fsdp: the command that starts N training processes, in the array LAUNCH
  local cfg=configs/accelerate/multi_gpu.yaml; [[ $1 == fsdp ]] && cfg=configs/accelerate/fsdp.yaml
  if [[ $mode == gpu ]]; then
    LAUNCH=("$PYTHON" -m accelerate.commands.launch --config_file "$cfg" --num_processes "$n_dev" --main_process_port 29517)
  else  # `accelerate launch --cpu` starts one process: torchrun with accelerate's variables (FSDP stays MULTI_CPU)
    LAUNCH=(env ACCELERATE_USE_CPU=true)
    [[ $1 == fsdp ]] && LAUNCH+=(ACCELERATE_USE_FSDP=true FSDP_VERSION=2 FSDP_AUTO_WRAP_POLICY=TRANSFORMER_BASED_WRAP
                                 FSDP_RESHARD_AFTER_FORWARD=true FSDP_STATE_DICT_TYPE=SHARDED_STATE_DICT)
    LAUNCH+=("$PYTHON" -m torch.distributed.run --nproc_per_node "$n_dev" --master_port 29517)
  fi
}

stage_train() {  # DDP and FSDP2 training steps judged by a service on this host, and the rank-split advantages
  local cap kind serve_pid args; cap=$(cap_for 60); ((cap)) || { skip train; return; }
  note "train: serve_node.sh, then $model on $n_dev processes: DDP, FSDP2 ($steps steps each)"
  setsid env HOST=127.0.0.1 PORT="$port" DB="$work/train.db" JOBS="$jobs" KERNELGYM_CACHE_DIR="$work/cache_train" \
    DEVICES="$([[ $mode == cpu ]] && echo cpu)" bash launch/serve_node.sh >"$work/logs/train_serve.log" 2>&1 &
  serve_pid=$!
  "$PYTHON" - "http://127.0.0.1:$port" <<'PY' >>"$work/logs/train_serve.log" 2>&1 || { echo 1 > "$work/train.rc"; stop_group "$serve_pid"; return; }
import sys, time
import httpx
for _ in range(120):
    try:
        if httpx.get(sys.argv[1] + "/health", timeout=5).json().get("status") == "ok":
            sys.exit(0)
    except (httpx.HTTPError, ValueError):
        pass
    time.sleep(1)
sys.exit("the judging service did not come up in 120 s")
PY
  if [[ $model == smollm2 ]]; then args=(--config configs/smollm2_h100.yaml)
  elif [[ $mode == gpu ]]; then args=(--config configs/tiny_cpu.yaml --use_cpu false --bf16 true --judge_device cuda)
  else args=(--config configs/tiny_cpu.yaml); fi
  # Two rollouts per process and one prompt's group over every process: each group straddles the ranks.
  args+=(--judge_url "http://127.0.0.1:$port" --max_steps "$steps" --per_device_train_batch_size 2
         --num_generations $((2 * n_dev)) --report_to none --save_strategy no --logging_steps 1)
  for kind in ddp fsdp; do
    launcher "$kind"
    cap=$(cap_for 150); ((cap)) || { skip "train_$kind"; continue; }
    note "train: $kind (cap ${cap}s)"
    capped "$cap" "$work/logs/train_$kind.log" "${LAUNCH[@]}" train/grpo.py "${args[@]}" --output_dir "$work/train_$kind"
    echo $? > "$work/train_$kind.rc"
    cap=$(cap_for 90); ((cap)) || { skip "adv_$kind"; continue; }
    capped "$cap" "$work/logs/adv_$kind.log" "${LAUNCH[@]}" "$work/py/adv_check.py" "$work/adv_$kind.json"
    echo $? > "$work/adv_$kind.rc"
    summarize
  done
  stop_group "$serve_pid"
}

# --- run, with the summary and the logs rewritten after every stage (a call stopped early still returns them)
summarize() {
  "$PYTHON" "$work/py/summary.py" "$work" "$mode" "$n_dev" "$model" "$((SECONDS - t_start))" "$out" >"$out/summary.txt"
  local rc=$? out_abs; out_abs=$(cd "$out" && pwd)
  (cd "$work" && find logs env.txt ./*.json ./*.rc ./*.skipped train_*/trainer_state.json -maxdepth 1 -print0 2>/dev/null \
     | tar czf "$out_abs/logs.tgz" --null --no-recursion -T -)
  return "$rc"
}
for s in local ray nodes train; do
  want "$s" && { "stage_$s"; summarize; }
done
summarize; rc=$?
cat "$out/summary.txt"
exit "$rc"
