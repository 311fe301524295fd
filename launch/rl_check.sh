#!/usr/bin/env bash
# Issue 27 on a 4-GPU H100 host (nvidia-h100-x4): LoRA SFT and LoRA RL of Qwen2.5-Coder-0.5B-Instruct, every
# stage resumable, every result that must outlive the machine sent back in $OUT as parts of <= 16 MiB.
#   bash launch/rl_check.sh prepare        HERE, once: wheels (.whl/train, .whl/serve), the GGUF's seven carry
#                                          parts (.carry/qwen) and .carry/in from parts fetched earlier
#                                          (SFT_PARTS RL_PARTS TASKS_TGZ CORPORA; KB=a KernelBench checkout and
#                                          KB_AUDIT=its audit rows from an earlier kbaudit, for the eval)
#   STAGE=a,b bash launch/rl_check.sh      on the GPU machine; stages, in the order they run:
#     corpus  the cold-start corpus, one builder per GPU in CORPUS_GPUS (runs/coldstart_g<i>, resumed by the
#             next call) for CORPUS_SECONDS; the calls that carry the GGUF's parts do this while it arrives
#     sft     LoRA SFT (configs/sft_qwen_coder_lora_h100.yaml) on GPU TRAIN_GPU for SFT_SECONDS, resumed by
#             the next call; once done: $OUT/sft_adapter (parts, bf16) and $OUT/tasks.tgz (the corpus's tasks)
#     sftfull full fine-tuning on the same rows (configs/sft_qwen_coder_h100.yaml, lr 2e-5) into runs/sft_qwen_full,
#             the same way; its weights (~2 GiB) cannot leave the machine: evaluate it there (MODELS=sftfull), the
#             LoRA-against-full comparison issue 27 asks for
#     serve   the judging service on JUDGE_GPUS (setsid: it outlives the call, warm for the next ones)
#     rl      LoRA RL from the SFT adapter (configs/grpo_qwen_coder_lora_h100x4.yaml) on TRAIN_GPU, judged by
#             the service (started if down), RL_SECONDS per call; $OUT/rl_state (parts with the optimizer
#             state), $OUT/rl_curve.png; the run goes on from the newest checkpoint, here or carried.
#             RL_BASE=sftfull: RL's LoRA on the full SFT model of this machine instead (runs/grpo_qwen_lora_full)
#     kbaudit KernelBench level 1's degenerate-task audit at full size, one shard per GPU in KBAUDIT_GPUS, in the
#             background beside the call's other stages (sft or corpus leave GPUs 1-3 idle) for KBAUDIT_SECONDS,
#             resumed by the next call; the rows go back in logs.tgz (kb_audit.jsonl: carry it with KB_AUDIT)
#     eval    base, SFT (LoRA; sftfull: the full fine-tuning), and RL policies (rl; rlfull: RL_BASE=sftfull's) (adapters merged: train/merge_policy.py) on EVAL_SETS (heldout,
#             heldout_more: 200 new held-out chains made here, seed HELDOUT_MORE_SEED=21, HELDOUT_MORE_N=200;
#             heldout_family, kernelbench: level 1, its audit's degenerate tasks left out and listed; train: RL's
#             own pool, whose pass rates pick RL's tasks: RL_ARGS="--task_pass_rates runs/eval_lora_sft_train
#             --task_min_pass 0.25 --task_max_pass 0.75"), one GPU
#             per model, in parallel (the service is stopped first); $OUT/eval_<model>.tgz
#     carry   nothing but stashing what this call carried (every stage does that first)
# Every call stashes what it carried (GGUF parts, wheels, .carry/in), restores .carry/in (joined and
# checked by train/adapter_parts.py), and writes $OUT/next.txt: what this machine holds and the next call.
# At most 8 files come back: next.txt, logs.tgz, and the stage's own (so sft and rl never share a call).
# env: CORPUS_SECONDS=120 CORPUS_N=1500 CORPUS_GPUS="0 1 2 3" JOBS=14 SEED=0 HELDOUT_TASKS=200
#      CORPUS_CPU_JOBS=0 CORPUS_CPU_SECONDS=400 (an interpreter builder on that many of the host's cores, started once;
#      with CORPUS_GPUS="" it is the only builder, writes the HELDOUT_TASKS and each corpus call lasts CORPUS_SECONDS)
#      CORPUS_FLAGS (every builder's, the same on every call: e.g. "--heldout-families pooling,loss")
#      SFT_SECONDS=330 RL_SECONDS=330: training time per call (no step is begun that the longest step so far
#      would carry past it), after a start-up of up to ~150 s; CALL_SECONDS=570 is the hard limit from the
#      script's start (training is killed 25 s before it, the newest checkpoint is still sent back; run
#      the call with timeout_s 600). SFT_ARGS RL_ARGS (overrides) RL_BASE=sft (sftfull: RL on the full SFT model) TRAIN_GPU=0 (rl: "0,1" is DDP on both) JUDGE_GPUS="1 2 3" JUDGE_JOBS=11 PORT=8000
#      LIMIT=200 SAMPLES=4 KB_LIMIT=100 KB_SAMPLES=1 MAX_NEW=4096 MODELS="base sft rl"
#      EVAL_SETS="heldout heldout_family kernelbench" (eval: cut at the hard limit, resumed by the next call)
#      EVAL_GPUS="0 1 2 3" (one model per GPU, round robin) KEEP_SERVICE=1 (eval beside a running RL: the service
#      stays up) KB_EVAL_FLAGS (e.g. --no-audit where an earlier audit found no degenerate task)
#      KBAUDIT_GPUS="1 2 3" KBAUDIT_SECONDS=300 KBAUDIT_TASK_TIMEOUT=180 KBAUDIT_DEVICE=cuda PYTHON=python3
#      A rehearsal without a GPU (docs/TRAINING.md): BASE_MODEL=kernelgym:tiny CORPUS_DEVICE=cpu JUDGE_DEVICES=cpu
#      ACCELERATE_CONFIG=configs/accelerate/cpu.yaml and the tiny overrides in SFT_ARGS / RL_ARGS.
set -uo pipefail
t0=$SECONDS
cd "$(dirname "$0")/.."
# Never NVLink multicast on these hosts (KINDS.md): inherited by every process started below.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
PYTHON="${PYTHON:-python3}"; export PYTHON  # serve_env.sh starts the service with it
sft_config=configs/sft_qwen_coder_lora_h100.yaml; sft_dir=runs/sft_qwen_lora
full_config=configs/sft_qwen_coder_h100.yaml; full_dir=runs/sft_qwen_full  # the sftfull stage
rl_config=configs/grpo_qwen_coder_lora_h100x4.yaml; rl_dir=runs/grpo_qwen_lora
# RL_BASE: what RL's LoRA trains on. sft: the base with the LoRA SFT adapter merged (both travel as parts);
# sftfull: the full SFT model made on this machine (STAGE=sftfull, ~380 s on an H200; 60.0 % correct on the
# held-out chains against LoRA SFT's 27.0 %, eighteenth session). Its weights cannot leave the machine, so every
# machine trains it again from the same rows and seed; only the RL adapter travels, and the full model's sha256
# travels with it (a re-trained base that differs is said, not refused).
rl_base="${RL_BASE:-sft}"; full_rl_dir=runs/grpo_qwen_lora_full  # evaluated as MODELS=rlfull
case $rl_base in
  sft) ;;
  sftfull) rl_dir=$full_rl_dir ;;
  *) echo "RL_BASE is sft or sftfull, not $rl_base"; exit 2 ;;
esac
base_model="${BASE_MODEL:-kernelgym:qwen-coder-0.5b}"; accel="${ACCELERATE_CONFIG:-configs/accelerate/single_gpu.yaml}"
qwen_parts="${QWEN_GGUF_PARTS:-7}"  # carry calls for the GGUF: a part and the tree must stay under 64 MiB
SERVE_WHEELS=(fastapi==0.165.0 starlette==1.10.0 pydantic==2.14.3 pydantic-core==2.50.4 uvicorn==0.54.0
              annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0 opentelemetry-api==1.45.2)

prepare() {  # here: what the calls carry, then the plan with each call's size
  local get=(python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
             --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
  [[ -d .whl/train/common ]] || { "${get[@]}" -d .whl/train/common trl==1.16.0 gguf==0.19.0 &&
    "${get[@]}" -d .whl/train/ds5 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 &&
    "${get[@]}" -d .whl/train/ds4 datasets==4.7.0 dill==0.4.0 multiprocess==0.70.18; } || return 1
  [[ -d .whl/serve ]] || "${get[@]}" -d .whl/serve "${SERVE_WHEELS[@]}" || return 1
  local name=Qwen2.5-Coder-0.5B-Instruct.tied.gguf gguf="${KERNELGYM_QWEN_CODER_GGUF:-}"
  # seven parts: beside a tree of 8.5 MiB a sixth of the GGUF (55.1 MiB) came to 63.6 MiB and the device tool
  # refused it (its count is stricter than du's); a split of another count is redone
  if [[ $base_model == kernelgym:qwen-coder-0.5b ]] && { [[ ! -f .carry/qwen/$name.part$((qwen_parts - 1)) ]] ||
      [[ -f .carry/qwen/$name.part$qwen_parts ]]; }; then
    rm -f .carry/qwen/"$name".part*
    [[ -f $gguf ]] || { echo "set KERNELGYM_QWEN_CODER_GGUF to the file of python -m train.qwen_coder (docs/COLDSTART.md)"; return 2; }
    mkdir -p .carry/qwen && (cd "$(dirname "$gguf")" && sha256sum "$name") > ".carry/qwen/$name.sha256" &&
      split -n "$qwen_parts" -d -a 1 "$gguf" ".carry/qwen/$name.part" || return 1
  fi
  # parts fetched from earlier calls (the files_at folders of their replies): SFT_PARTS, RL_PARTS, TASKS_TGZ
  mkdir -p .carry/in
  # the machine's copy of the tree has no .git: its evals' run.json name this commit (KERNELGYM_COMMIT)
  echo "$(git rev-parse HEAD)$([[ -n $(git status --porcelain --untracked-files=no) ]] && echo +dirty)" > .carry/in/commit.txt
  local pair var src; for pair in SFT_PARTS:sft_adapter RL_PARTS:rl_state; do
    var=${pair%%:*}; src=${!var:-}
    if [[ -n $src ]]; then
      python3 -m train.adapter_parts verify "$src" || return 1
      rm -rf ".carry/in/${pair#*:}" && cp -r "$src" ".carry/in/${pair#*:}" || return 1
    fi
  done
  if [[ -n ${TASKS_TGZ:-} ]]; then cp "$TASKS_TGZ" .carry/in/tasks.tgz || return 1; fi
  if [[ -n ${KB:-} ]]; then  # KernelBench's level 1 (the eval's third set): the tasks alone, never committed
    local kb_root=$KB; [[ -d $KB/KernelBench ]] && kb_root=$KB/KernelBench
    [[ -d $kb_root/level1 ]] || { echo "KB=$KB holds no level1/ (nor KernelBench/level1/): not a KernelBench checkout"; return 2; }
    tar czf .carry/in/kernelbench.tgz --transform "s|^level1|kernelbench/level1|" -C "$kb_root" level1 || return 1
  fi
  if [[ -n ${KB_AUDIT:-} ]]; then cp "$KB_AUDIT" .carry/in/kb_audit.jsonl || return 1; fi  # rows of an earlier kbaudit
  local c; for c in ${CORPORA:-}; do  # corpus directories built elsewhere (on this CPU, say), for the sft stage
    [[ -f $c/train.jsonl ]] || { echo "$c holds no train.jsonl: not a corpus of kernelgym data coldstart"; return 2; }
    local n; n=$(basename "$c"); [[ $n == coldstart_* ]] || n="coldstart_$n"
    tar czf ".carry/in/$n.tgz" --exclude dataset --transform "s|^$(basename "$c")|$n|" -C "$(dirname "$c")" "$(basename "$c")" \
      || return 1
  done
  local tree; tree=$( (git ls-files; git ls-files --others --exclude-standard) | sort -u | tr '\n' '\0' \
    | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  mib() { du -cb "$@" 2>/dev/null | tail -1 | awk -v t="$tree" '{m = ($1 + t) / 1048576; printf "%.1f MiB%s", m, (m > 64 ? "  OVER THE 64 MiB LIMIT" : "")}'; }
  echo "working tree $(awk -v t="$tree" 'BEGIN {printf "%.1f MiB", t / 1048576}'); each call's carry with it (limit 64 MiB):"
  # the training wheels ride with .carry/in: beside part 0 they passed the limit once the tree reached 7 MiB
  echo "  .carry/in .whl/serve .whl/train: $(mib .carry/in .whl/serve .whl/train)"
  echo "  .carry/qwen/$name.part0 .carry/qwen/$name.sha256: $(mib .carry/qwen/$name.part0 .carry/qwen/$name.sha256)"
  local p; for ((p = 1; p < qwen_parts; p++)); do echo "  .carry/qwen/$name.part$p: $(mib .carry/qwen/$name.part$p)"; done
}
if [[ ${1:-} == prepare ]]; then prepare; exit $?; fi

out="${OUT:-rl_check_out}"; mkdir -p "$out"
work=/tmp/kg_rl; mkdir -p "$work/logs"  # outlives the call on a warm machine, like $stash
logs="$work/logs"
stages=",${STAGE:-carry},"
want() { [[ $stages == *",$1,"* ]]; }
if want sft && want sftfull; then echo "sft and sftfull train on the same GPU: one of them per call"; exit 2; fi
if want sft && want rl; then echo "sft and rl each send parts back: one of them per call (8 files at most)"; exit 2; fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
source launch/smollm2_env.sh  # _carry_gguf, _train_wheels, $stash, $qwen_gguf
port="${PORT:-8000}"; judge_url="http://127.0.0.1:$port"
train_gpu="${TRAIN_GPU:-0}"; judge_gpus="${JUDGE_GPUS:-1 2 3}"
rc=0
note() { echo "$*" | tee -a "$logs/rl_check.txt"; }

# --- what this call carried: stashed outside the checkout, restored once complete -----------------------
gguf_state=$(_carry_gguf "$qwen_gguf" .carry/qwen "$qwen_parts" 2>&1); gguf_rc=$?
[[ $gguf_rc == 0 ]] && export KERNELGYM_QWEN_CODER_GGUF="$stash/$qwen_gguf" QWEN_GGUF="$stash/$qwen_gguf"
[[ $base_model == kernelgym:qwen-coder-0.5b ]] || { gguf_rc=0; gguf_state="not needed for $base_model"; }
if "$PYTHON" -c "import trl, datasets, gguf" 2>/dev/null; then wheels_rc=0; wheels_state="in the image"
else
  wheels_state=$(_train_wheels 2>&1); wheels_rc=$?  # installs into /tmp/site once
  [[ $wheels_rc == 0 ]] && export PYTHONPATH="/tmp/site:$PWD" TRL_EXPERIMENTAL_SILENCE=1
fi
serve_site=/tmp/site_serve
if ! "$PYTHON" -c "import fastapi, uvicorn, pydantic" 2>/dev/null && [[ ! -f $serve_site/.ok && -d .whl/serve ]]; then
  "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$serve_site" .whl/serve/*.whl \
    && touch "$serve_site/.ok"
fi
[[ -f $serve_site/.ok ]] && export PYTHONPATH="$PYTHONPATH:$serve_site"  # after the image's own packages
mkdir -p "$stash/in"
for d in sft_adapter rl_state; do
  if [[ -f .carry/in/$d/manifest.json ]] && ! cmp -s ".carry/in/$d/manifest.json" "$stash/in/$d/manifest.json"; then
    rm -rf "$stash/in/$d"; cp -r ".carry/in/$d" "$stash/in/$d"  # new parts: restored below
  fi
done
for f in .carry/in/*.tgz .carry/in/commit.txt; do [[ -f $f ]] && cp "$f" "$stash/in/"; done
[[ -f $stash/in/commit.txt ]] && export KERNELGYM_COMMIT="$(cat "$stash/in/commit.txt")"  # prepare's commit, for run.json
mkdir -p runs "$stash/kb_audit"
if [[ -f $stash/in/tasks.tgz && ! -d runs/coldstart/tasks ]]; then tar xzf "$stash/in/tasks.tgz" -C runs || rc=1; fi
if [[ -f $stash/in/kernelbench.tgz && ! -d runs/kernelbench ]]; then tar xzf "$stash/in/kernelbench.tgz" -C runs || rc=1; fi
# audit rows carried from an earlier machine: the kbaudit stage resumes from them, the eval excludes by them
[[ -f .carry/in/kb_audit.jsonl && ! -f $stash/kb_audit/carried.jsonl ]] && cp .carry/in/kb_audit.jsonl "$stash/kb_audit/carried.jsonl"
for f in "$stash"/in/coldstart_*.tgz; do  # corpora built elsewhere (prepare's CORPORA): runs/coldstart_<name>
  [[ -f $f && ! -d runs/$(basename "$f" .tgz) ]] && { tar xzf "$f" -C runs || rc=1; }
done
restore() {  # DIR INTO: join carried parts once (a later call keeps what training made of them)
  [[ -f $1/manifest.json && ! -f $1/.restored ]] || return 0
  "$PYTHON" -m train.adapter_parts join "$1" --into "$2" >>"$logs/restore.log" 2>&1 && touch "$1/.restored" \
    || { note "carried parts $1 not restored: $(tail -1 "$logs/restore.log")"; rc=1; }
}
restore "$stash/in/sft_adapter" runs
# Carried RL parts go to the run they came from, whatever RL_BASE this call has: a checkpoint that lists
# base_model.sha256 began on the full SFT model (runs/grpo_qwen_lora_full). The twentieth session's carry call
# (no RL_BASE) joined checkpoint-5 of the full-model run into the LoRA run's directory, and RL began afresh.
rl_parts_dir() {
  if grep -q '"base_model.sha256"' "$1/manifest.json" 2>/dev/null; then echo "$full_rl_dir"; else echo runs/grpo_qwen_lora; fi
}
if [[ -f $stash/in/rl_state/manifest.json && $(rl_parts_dir "$stash/in/rl_state") != "$rl_dir" ]]; then
  note "carried rl_state/ belongs to $(rl_parts_dir "$stash/in/rl_state") (RL_BASE=$rl_base uses $rl_dir): restored there"
fi
restore "$stash/in/rl_state" "$(rl_parts_dir "$stash/in/rl_state")"
{ nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "$PYTHON" -c "import torch, transformers, peft; print('torch', torch.__version__, 'transformers', transformers.__version__, 'peft', peft.__version__)"
} > "$logs/env.txt" 2>&1

need_model() {  # the GGUF and the training wheels, or say what to carry
  [[ $gguf_rc == 0 && $wheels_rc == 0 ]] && return 0
  note "stage $1 needs the model and the training wheels: $gguf_state $wheels_state"; return 3
}
service_up() { "$PYTHON" -c "import httpx, sys; sys.exit(httpx.get('$judge_url/health', timeout=5).json().get('status') != 'ok')" 2>/dev/null; }
start_service() {  # the local backend on JUDGE_GPUS, in a session of its own so that it outlives this call
  service_up && return 0
  local devices="${JUDGE_DEVICES:-}"
  [[ -n $devices ]] || { devices=$(for g in $judge_gpus; do printf 'cuda:%s,' "$g"; done); devices=${devices%,}; }
  local tree; tree=$(frozen_tree) || { note "could not copy the tree for the service"; return 1; }
  setsid env -C "$tree" HOST=127.0.0.1 PORT="$port" DB="$work/judge.db" JOBS="${JUDGE_JOBS:-11}" DEVICES="$devices" \
    KERNELGYM_CACHE_DIR="$work/cache" PYTHONPATH="${PYTHONPATH//"$PWD"/"$tree"}" bash launch/serve_node.sh \
    >>"$logs/serve.log" 2>&1 < /dev/null &
  echo $! > "$work/serve.pid"  # the leader of the service's process group (setsid)
  local i; for ((i = 0; i < 120; i++)); do service_up && { note "judging service up on $devices"; return 0; }; sleep 1; done
  note "the judging service did not come up in 120 s: $(tail -3 "$logs/serve.log")"; return 1
}
stop_service() { [[ -f $work/serve.pid ]] && kill -- -"$(cat "$work/serve.pid")" 2>/dev/null; rm -f "$work/serve.pid"; }
# `accelerate launch` with one process re-raises a child's exit status as its own exit 1 (CalledProcessError): the
# trainer's 3 (time budget reached, checkpoint saved: resume) then read as a failure in the fifteenth session.
launcher_code() {  # $1: the launcher's exit code, $2: its log
  if (($1 == 1)) && grep -q 'returned non-zero exit status 3\.' "$2" 2>/dev/null; then echo 3; else echo "$1"; fi; }
hard_limit() { echo $(( ${CALL_SECONDS:-570} - (SECONDS - t0) - 25 )); }  # seconds left for a training command
train_seconds() {  # --max_seconds for a training command: what was asked, capped so that the trainer's own stop (and
  # its checkpoint) comes before the hard limit kills it; its clock starts after the model loads (STARTUP_SECONDS).
  # (The eighth session lost a whole SFT call: 90 s waiting for the corpus builder left 435 s, SFT_SECONDS asked 390.)
  local want=$1 cap=$(( $(hard_limit) - ${STARTUP_SECONDS:-170} ))
  ((cap < want)) && { want=$cap; note "training: ${1} s asked, ${cap} s left after start-up: the trainer stops there" >&2; }
  ((want < 30)) && want=30; echo "$want"; }
frozen_tree() {  # a copy of the code for processes that outlive this call (the service, the corpus builder): the
  # next call replaces the working tree while they run, and a lazy import in between fails (the eighth session's
  # builder died on `cannot import name 'interpreter_semantics'`). Prints the copy's path.
  local dir="$work/tree_$(date +%s)"; mkdir -p "$dir"
  cp -a kernelgym train rewards data launch configs pyproject.toml "$dir/" && echo "$dir"; }
newest_checkpoint() { ls -d "$1"/checkpoint-* 2>/dev/null | sort -t- -k2 -n | tail -1; }
# A run's adapter to evaluate or merge: its final one at the top of its directory, else its newest checkpoint.
run_adapter() { if [[ -f $1/adapter_model.safetensors ]]; then echo "$1"; else newest_checkpoint "$1"; fi; }

if want corpus; then
  start=$SECONDS; pids=(); gpus="${CORPUS_GPUS-0 1 2 3}"  # CORPUS_GPUS="": the interpreter builder alone
  for g in $gpus; do  # one builder per GPU, each its own seed and directory (resumed by the next call)
    held=0; [[ $g == "${gpus%% *}" ]] && held="${HELDOUT_TASKS:-200}"  # the evaluation's tasks: one builder writes them
    CUDA_VISIBLE_DEVICES=$g "$PYTHON" -m kernelgym.cli data coldstart --n "${CORPUS_N:-1500}" --out "runs/coldstart_g$g" \
      --device "${CORPUS_DEVICE:-cuda}" --seed "$(( ${SEED:-0} + g ))" --heldout-tasks "$held" --jobs "${JOBS:-14}" \
      --max-seconds "${CORPUS_SECONDS:-120}" --chunk "$(( 2 * ${JOBS:-14} ))" ${CORPUS_FLAGS:-} --no-progress \
      > "$logs/corpus_g$g.log" 2>&1 &
    pids+=($!)
  done
  cpu_jobs="${CORPUS_CPU_JOBS:-0}"
  if ((cpu_jobs > 0)) && [[ ! -f $work/corpus_cpu.pid ]]; then
    # Once per machine, on the host's last CORPUS_CPU_JOBS cores: an interpreter builder that runs on across the
    # calls that carry the GGUF (detached, like the service) for CORPUS_CPU_SECONDS; the sft stage waits for it.
    n=$(nproc); tree=$(frozen_tree) || exit 1
    CUDA_VISIBLE_DEVICES= PYTHONPATH="${PYTHONPATH//"$PWD"/"$tree"}" setsid taskset -c "$((n - cpu_jobs))-$((n - 1))" \
      env -C "$tree" "$PYTHON" -m kernelgym.cli data coldstart --n 6000 --out "$PWD/runs/coldstart_cpu" --device cpu --seed "$(( ${SEED:-0} + 10 ))" --jobs "$cpu_jobs" \
      --heldout-tasks "$([[ -z ${gpus// /} ]] && echo "${HELDOUT_TASKS:-200}" || echo 0)" \
      --max-seconds "${CORPUS_CPU_SECONDS:-400}" --chunk "$((2 * cpu_jobs))" ${CORPUS_FLAGS:-} --no-progress \
      > "$logs/corpus_cpu.log" 2>&1 < /dev/null &
    echo $! > "$work/corpus_cpu.pid"; note "corpus: interpreter builder on $cpu_jobs cores for ${CORPUS_CPU_SECONDS:-400} s"
  fi
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  if ((${#pids[@]} == 0)) && [[ -f $work/corpus_cpu.pid ]]; then  # the call lasts CORPUS_SECONDS while it builds
    pid=$(cat "$work/corpus_cpu.pid"); end=$((start + ${CORPUS_SECONDS:-120}))
    while kill -0 "$pid" 2>/dev/null && ((SECONDS < end)); do sleep 2; done
  fi
  note "corpus: $(cat runs/coldstart_*/judged.jsonl 2>/dev/null | wc -l) answers judged in $(ls -d runs/coldstart_* 2>/dev/null | wc -l) builders here, $((SECONDS - start)) s"
fi

kb_audit_rows() {  # every audit row done, carried or made by a KernelBench eval, one per task (the newest), to stdout
  "$PYTHON" - "$stash"/kb_audit/*.jsonl "$work"/kb_resume_*.jsonl runs/eval_lora_*_kernelbench/audit.jsonl <<'PY'
import json, sys
rows = {}
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError:
        continue
    for line in lines:
        try:
            rows[json.loads(line)["task_id"]] = line
        except (ValueError, KeyError, TypeError):
            pass  # a torn last line of a shard killed mid-write
sys.stdout.write("".join(line + "\n" for line in rows.values()))
PY
}
kb_pids=()
if want kbaudit; then
  # KernelBench level 1's degenerate-task audit at full size (the eval excludes what it flags), on GPUs the other
  # stages leave idle: one shard of the tasks per GPU in KBAUDIT_GPUS, each resumed from its rows in $stash.
  if [[ ! -d runs/kernelbench/level1 ]]; then note "kbaudit: no KernelBench here: prepare with KB=DIR, carry .carry/in"
  else
    kb_gpus=(${KBAUDIT_GPUS:-1 2 3}); n_kb=${#kb_gpus[@]}; i=0
    for g in "${kb_gpus[@]}"; do
      shard=runs/kb_shard$i/level1; rm -rf "runs/kb_shard$i"; mkdir -p "$shard"
      j=0; for f in runs/kernelbench/level1/*.py; do ((j % n_kb == i)) && cp "$f" "$shard/"; j=$((j + 1)); done
      # the shard resumes from every row done anywhere (other shards' rows are skipped as not in its spec)
      kb_audit_rows > "$work/kb_resume_$i.tmp" && mv "$work/kb_resume_$i.tmp" "$work/kb_resume_$i.jsonl"
      CUDA_VISIBLE_DEVICES=$g timeout --signal=INT -k 20 "${KBAUDIT_SECONDS:-300}" "$PYTHON" -m kernelgym.cli tasks audit \
        "kernelbench:runs/kb_shard$i:level1" --device "${KBAUDIT_DEVICE:-cuda}" --size auto --json-out "$work/kb_resume_$i.jsonl" --resume \
        --task-timeout "${KBAUDIT_TASK_TIMEOUT:-180}" --jobs 1 > "$logs/kbaudit_$i.log" 2>&1 &
      kb_pids+=($!); i=$((i + 1))
    done
    note "kbaudit: ${#kb_pids[@]} shard(s) of KernelBench level 1 on GPUs ${kb_gpus[*]} for ${KBAUDIT_SECONDS:-300} s"
  fi
fi
kb_audit_wait() {  # the shards' rows merged into $stash, one per task
  ((${#kb_pids[@]})) || return 0
  for p in "${kb_pids[@]}"; do wait "$p"; done; kb_pids=()
  kb_audit_rows > "$work/kb_done.tmp" && mv "$work/kb_done.tmp" "$stash/kb_audit/done.jsonl"
  cp "$stash/kb_audit/done.jsonl" "$logs/kb_audit.jsonl"
  note "kbaudit: $(wc -l < "$stash/kb_audit/done.jsonl") of $(ls runs/kernelbench/level1/*.py | wc -l) level-1 tasks audited" \
    "($(grep -c '"verdict": "degenerate"' "$stash/kb_audit/done.jsonl") degenerate); rows in logs.tgz: kb_audit.jsonl"
}

base_model_sum() {  # the full SFT model's identity: its weights' files, in order
  cat "$full_dir"/model*.safetensors 2>/dev/null | sha256sum | cut -d" " -f1
}
sft_trained() {  # DIR: a finished SFT there (an adapter, or a full model), not a checkpoint in progress
  [[ -f $1/adapter_model.safetensors || ( -f $1/config.json && -n $(ls "$1"/model*.safetensors 2>/dev/null) ) ]]
}
if want sft || want sftfull; then
  kind=sft; want sftfull && kind=sftfull
  need_model $kind || exit 3
  config=$sft_config; dir=$sft_dir; [[ $kind == sftfull ]] && { config=$full_config; dir=$full_dir; }
  if [[ -f $work/corpus_cpu.pid ]]; then  # the interpreter builder: its own time limit ends it
    pid=$(cat "$work/corpus_cpu.pid"); i=0
    while kill -0 "$pid" 2>/dev/null && ((i < 90)); do sleep 1; i=$((i + 1)); done
    if kill -0 "$pid" 2>/dev/null; then  # SIGINT: the builder writes train.jsonl from what it judged, then exits
      kill -INT -- -"$pid" 2>/dev/null; i=0
      while kill -0 "$pid" 2>/dev/null && ((i < 60)); do sleep 1; i=$((i + 1)); done
      if kill -0 "$pid" 2>/dev/null; then kill -- -"$pid" 2>/dev/null; note "corpus: interpreter builder stopped (no answer to SIGINT in 60 s): left out"
      else note "corpus: interpreter builder stopped with SIGINT after 90 s: $(wc -l < runs/coldstart_cpu/train.jsonl 2>/dev/null || echo no) rows kept"; fi
    fi
    rm -f "$work/corpus_cpu.pid"
  fi
  if [[ ! -f runs/coldstart/train.jsonl ]]; then  # merged once; a resumed SFT trains on the same rows
    srcs=$(ls runs/coldstart_*/train.jsonl 2>/dev/null | xargs -r -n1 dirname)  # built here (_g<i>, _cpu) and carried
    [[ -n $srcs ]] || { note "no corpus on this machine: run STAGE=corpus first"; exit 3; }
    "$PYTHON" -m kernelgym.cli data coldstart --merge $srcs --out runs/coldstart > "$logs/merge.log" 2>&1 || exit 1
  fi
  start=$SECONDS; code=0
  if ! sft_trained "$dir" && ! sft_trained "$dir.trained"; then  # done once: a finished SFT is only exported again
    CUDA_VISIBLE_DEVICES=$train_gpu timeout -k 10 "$(hard_limit)" "$PYTHON" -m accelerate.commands.launch --config_file "$accel" \
      train/sft.py --config "$config" --model_name_or_path "$base_model" --data runs/coldstart/train.jsonl --output_dir "$dir" \
      --max_seconds "$(train_seconds "${SFT_SECONDS:-330}")" --resume_from_checkpoint auto --save_total_limit 1 ${SFT_ARGS:-} > "$logs/$kind.log" 2>&1
    code=$(launcher_code $? "$logs/$kind.log")
  fi
  note "$kind: exit $code after $((SECONDS - start)) s ($(grep -c "'loss'" "$logs/$kind.log" 2>/dev/null) loss lines)"
  [[ $kind == sftfull && $code == 0 ]] && {  # nothing to send back but the tasks: the model is evaluated here
    note "sftfull: model in $full_dir (kept on this machine; STAGE=eval MODELS=sftfull)"
    tar czf "$out/tasks.tgz" -C runs $(cd runs && ls -d coldstart/tasks coldstart/*.json 2>/dev/null) || rc=1; code=done; }
  case $code in
    done) ;;
    0) "$PYTHON" -m train.adapter_parts split "$sft_dir" --out "$out/sft_adapter" --adapter-only --dtype bfloat16 \
         | tee -a "$logs/rl_check.txt" || rc=1
       # from now on this machine uses the adapter exactly as it travels (bf16), as every later machine will
       if [[ ! -d $sft_dir.trained ]]; then
         mv "$sft_dir" "$sft_dir.trained" && "$PYTHON" -m train.adapter_parts join "$out/sft_adapter" --into runs \
           >> "$logs/rl_check.txt" 2>&1 || rc=1
       fi
       tar czf "$out/tasks.tgz" -C runs $(cd runs && ls -d coldstart/tasks coldstart/*.json 2>/dev/null) || rc=1 ;;
    3) rc=3 ;;
    124|137) note "$kind: killed at the call's hard limit; the next call resumes from the newest checkpoint"; rc=3 ;;
    *) rc=1 ;;
  esac
fi

if want serve || want rl; then start_service || rc=1; fi

if want rl; then
  need_model rl || exit 3
  if [[ $rl_base == sftfull ]]; then
    sft_trained "$full_dir" || { note "RL_BASE=sftfull: no full SFT model here (STAGE=sftfull first, on every machine)"; exit 3; }
    policy=(--model_name_or_path "$full_dir" --base_adapter "")
    base_sum=$(base_model_sum); mkdir -p "$rl_dir"
    began=$(cat "$rl_dir/base_model.sha256" 2>/dev/null || cat "$(newest_checkpoint "$rl_dir")/base_model.sha256" 2>/dev/null)
    if [[ -n $began && $began != "$base_sum" ]]; then
      note "rl: the full SFT model here (sha256 ${base_sum:0:12}…) is not the one this run began on (${began:0:12}…): a re-trained base; the RL adapter goes on from it"
    fi
    [[ -n $began ]] || began=$base_sum
    echo "$began" > "$rl_dir/base_model.sha256"
  else
    [[ -f $sft_dir/adapter_model.safetensors ]] || { note "no SFT adapter: STAGE=sft here, or carry .carry/in/sft_adapter"; exit 3; }
    policy=(--model_name_or_path "$base_model" --base_adapter "$sft_dir")
  fi
  [[ -d runs/coldstart/tasks ]] || { note "no tasks: carry .carry/in/tasks.tgz (from the sft stage)"; exit 3; }
  start=$SECONDS
  # TRAIN_GPU="0,1": DDP over those GPUs (issue 28). Every rank draws its own prompts, so a step has n times the
  # rollouts of one GPU in about the same time: decoding a 0.5B model is latency-bound, not batch-bound.
  n_train=$(tr ',' '\n' <<<"$train_gpu" | grep -c .)
  rl_launch=("$PYTHON" -m accelerate.commands.launch --config_file "$accel")
  if ((n_train > 1)); then
    if [[ ${JUDGE_DEVICES:-} == cpu ]]; then  # the CPU rehearsal: `accelerate launch --cpu` starts one process
      rl_launch=(env ACCELERATE_USE_CPU=true "$PYTHON" -m torch.distributed.run --nproc_per_node "$n_train" --master_port 29518)
    else
      rl_launch=("$PYTHON" -m accelerate.commands.launch --config_file "${ACCELERATE_CONFIG:-configs/accelerate/multi_gpu.yaml}"
                 --num_processes "$n_train" --main_process_port 29518)
    fi
    note "rl: DDP over $n_train processes (GPUs $train_gpu)"
  fi
  CUDA_VISIBLE_DEVICES=$train_gpu timeout -k 10 "$(hard_limit)" "${rl_launch[@]}" \
    train/grpo.py --config "$rl_config" "${policy[@]}" --judge_url "$judge_url" --output_dir "$rl_dir" \
    --max_seconds "$(train_seconds "${RL_SECONDS:-330}")" --resume_from_checkpoint auto ${RL_ARGS:-} > "$logs/rl.log" 2>&1
  code=$(launcher_code $? "$logs/rl.log")
  note "rl: exit $code after $((SECONDS - start)) s; $(grep -m1 -o 'resuming from .*' "$logs/rl.log" || echo 'a new run')"
  case $code in
    0|3) ;;
    124|137) note "rl: killed at the call's hard limit: lower RL_SECONDS (a step takes timing/step_s)"; rc=3 ;;
    *) rc=1 ;;
  esac
  ckpt=$(newest_checkpoint "$rl_dir")
  if [[ -n $ckpt ]]; then
    [[ -f $rl_dir/base_model.sha256 ]] && cp "$rl_dir/base_model.sha256" "$ckpt/"  # travels with the parts
    "$PYTHON" -m train.adapter_parts split "$ckpt" --out "$out/rl_state" | tee -a "$logs/rl_check.txt" || rc=1
    cp "$ckpt/trainer_state.json" "$logs/rl.trainer_state.json"
    "$PYTHON" -m train.plot_curve "$logs/rl.trainer_state.json" --out "$logs/rl_curve.png" \
      --title "LoRA TRLOO from LoRA SFT (Qwen2.5-Coder-0.5B)" >> "$logs/rl.log" 2>&1 && cp "$logs/rl_curve.png" "$out/"
  fi
fi

if want eval; then
  need_model eval || exit 3
  # its GPUs judge the evaluations now; KEEP_SERVICE=1 leaves it to a detached RL run beside (launch/rl_detached.sh)
  [[ ${KEEP_SERVICE:-0} == 1 ]] || stop_service
  kb_audit_wait  # a kbaudit of this call first: its rows are the KernelBench evals' screen
  rl_adapter=$(run_adapter "$rl_dir")
  gpus=(${EVAL_GPUS:-0 1 2 3}); i=0; pids=()
  # heldout_more: 200 new held-out chains (issue 27 asks >= 200; the corpus's own split has 107), generated here
  # once, before the models share it: seeded, validated on the CPU, never a chain of any train split (the split is
  # a salted hash of the chain). The fifteenth session made the same 200 on its CPU (heldout.jsonl sha256 8261eed77224…)
  if [[ " ${EVAL_SETS:-} " == *" heldout_more "* && ! -f runs/heldout_more/heldout.jsonl ]]; then
    "$PYTHON" -m kernelgym.cli tasks generate --out runs/heldout_more --n "${HELDOUT_MORE_N:-200}" \
      --seed "${HELDOUT_MORE_SEED:-21}" --only-split heldout --heldout-families "${HELDOUT_MORE_FAMILIES:-loss,pooling}" \
      --format jsonl --device cpu --no-progress > "$logs/heldout_more.log" 2>&1 \
      || note "eval: heldout_more not generated ($(tail -1 "$logs/heldout_more.log"))"
  fi
  for name in ${MODELS:-base sft rl}; do
    merge_base=""
    case $name in
      base) model=$base_model; [[ -n ${QWEN_GGUF:-} ]] && model="gguf:$QWEN_GGUF" ;;
      sft) model=runs/policy_sft; adapters=(--adapter "$sft_dir") ;;
      sftfull) model=$full_dir  # a full model: nothing to merge
               sft_trained "$model" || { note "eval: no full SFT model here (STAGE=sftfull first)"; rc=3; continue; } ;;
      rl) [[ $rl_base == sft ]] || { note "eval: MODELS=rl is RL on the LoRA SFT adapter; RL_BASE=sftfull's run is MODELS=rlfull"; rc=2; continue; }
          model=runs/policy_rl_$(basename "$rl_adapter"); adapters=(--adapter "$sft_dir" --adapter "$rl_adapter") ;;
      rlfull)  # RL_BASE=sftfull's adapter on the full SFT model of this machine
        sft_trained "$full_dir" || { note "eval: rlfull needs the full SFT model here (STAGE=sftfull first)"; rc=3; continue; }
        a=$(run_adapter "$full_rl_dir")
        [[ -n $a ]] || { note "eval: no RL_BASE=sftfull run here ($full_rl_dir)"; rc=3; continue; }
        model=runs/policy_rlfull_$(basename "$a"); adapters=(--adapter "$a"); merge_base=$full_dir ;;
      *) note "MODELS: base, sft, sftfull, rl or rlfull, not $name"; rc=2; continue ;;
    esac
    # merged once per adapter: again when the adapter is newer (a run's final adapter sits at the top of its directory)
    if [[ $name != base && $name != sftfull && ( ! -f $model/config.json || ${adapters[-1]}/adapter_model.safetensors -nt $model/config.json ) ]]; then
      "$PYTHON" -m train.merge_policy --model "${merge_base:-$base_model}" "${adapters[@]}" --out "$model" \
        >> "$logs/merge_$name.log" 2>&1 || { rc=1; continue; }
    fi
    ( for set in ${EVAL_SETS:-heldout heldout_family kernelbench}; do  # one model's sets, one after another, on its GPU
        case $set in
          heldout|heldout_family|train) spec="gen:runs/coldstart/tasks:$set"; flags=(--limit "${LIMIT:-200}" --no-audit --samples "${SAMPLES:-4}") ;;
          heldout_more) spec="gen:runs/heldout_more:heldout"; flags=(--limit "${LIMIT:-200}" --no-audit --samples "${SAMPLES:-4}") ;;
          kernelbench)  # the real level-1 tasks at full size; the audit's degenerate tasks are left out and listed
            [[ -d runs/kernelbench/level1 ]] || { echo "eval: no KernelBench here (prepare with KB=DIR)"; continue; }
            spec="kernelbench:runs/kernelbench:level1"; flags=(--size auto --limit "${KB_LIMIT:-100}" --samples "${KB_SAMPLES:-1}" ${KB_EVAL_FLAGS:-})  # auto: full on a GPU
            mkdir -p "runs/eval_lora_${name}_$set"  # rows the kbaudit stage made: only the rest is audited here
            [[ -f runs/eval_lora_${name}_$set/audit.jsonl ]] || kb_audit_rows > "runs/eval_lora_${name}_$set/audit.jsonl" ;;
          *) echo "EVAL_SETS: heldout, heldout_more, heldout_family, train or kernelbench, not $set"; exit 2 ;;
        esac
        # resumable: a run cut at the call's hard limit goes on from its generations and verdicts next call
        lim=$(hard_limit); ((lim > 30)) || { echo "eval $name $set: exit 124 (no time left in this call)"; exit 3; }
        CUDA_VISIBLE_DEVICES=${gpus[i % ${#gpus[@]}]} timeout -k 10 "$lim" "$PYTHON" -m kernelgym.cli eval --model "$model" \
          --tasks "$spec" "${flags[@]}" --max-new-tokens "${MAX_NEW:-4096}" --gen-batch 128 --reps 10 --no-compile-baseline \
          --no-progress --out "runs/eval_lora_${name}_$set"
        code=$?; echo "eval $name $set: exit $code"
        ((code == 124 || code == 137)) && exit 3; ((code == 0)) || exit 1
      done ) > "$logs/eval_$name.log" 2>&1 &
    pids+=($!); i=$((i + 1))
  done
  for p in "${pids[@]}"; do
    wait "$p"; code=$?
    ((code == 3)) && { note "eval: cut at the call's hard limit: STAGE=eval again resumes it"; rc=3; }
    ((code != 0 && code != 3)) && rc=1
  done
  note "eval: $(for name in ${MODELS:-base sft rl}; do grep -h '^eval .*: exit' "$logs/eval_$name.log"; done 2>/dev/null | tr '\n' ';')"
  for name in ${MODELS:-base sft rl}; do  # one archive per model: each stays under the 16 MiB a file may bring back
    dirs=$(cd runs && ls -d eval_lora_"${name}"_* 2>/dev/null)
    [[ -n $dirs ]] && { tar czf "$out/eval_$name.tgz" -C runs $dirs || rc=1; }
  done
fi
kb_audit_wait

# --- what this machine holds now, and the next call ------------------------------------------------------
{
  echo "machine: $(head -1 "$logs/env.txt"), $(nvidia-smi -L 2>/dev/null | wc -l) GPU(s)"
  if [[ $gguf_rc == 0 ]]; then echo "model: $base_model ready (${QWEN_GGUF:-$gguf_state})"; else echo "model: $gguf_state"; fi
  [[ $wheels_rc == 0 ]] && echo "training wheels: installed" || echo "training wheels: $wheels_state"
  if "$PYTHON" -c "import fastapi, uvicorn, pydantic" 2>/dev/null; then echo "service wheels: installed"
  else echo "service wheels: carry .whl/serve"; fi
  service_up && echo "judging service: up at $judge_url" || echo "judging service: down"
  if [[ -d runs/kernelbench/level1 ]]; then
    echo "kernelbench: level 1 here, $(kb_audit_rows | wc -l) of $(ls runs/kernelbench/level1/*.py | wc -l) tasks audited (STAGE=…,kbaudit resumes)"
  else echo "kernelbench: none (prepare with KB=DIR)"; fi
  echo "corpus: $(cat runs/coldstart_*/train.jsonl 2>/dev/null | wc -l) rows built here or carried; merged: $([[ -f runs/coldstart/train.jsonl ]] && wc -l < runs/coldstart/train.jsonl || echo no); tasks: $([[ -d runs/coldstart/tasks ]] && echo yes || echo no)"
  if [[ -f $sft_dir/adapter_model.safetensors ]]; then echo "sft: adapter ready ($sft_dir)"
  elif c=$(newest_checkpoint "$sft_dir"); [[ -n $c ]]; then echo "sft: in progress, $(basename "$c")"; else echo "sft: none"; fi
  if sft_trained "$full_dir"; then echo "sftfull: full model ready ($full_dir, evaluated here: MODELS=sftfull)"
  elif c=$(newest_checkpoint "$full_dir"); [[ -n $c ]]; then echo "sftfull: in progress, $(basename "$c")"; fi
  c=$(newest_checkpoint "$rl_dir")
  if [[ -n $c ]]; then
    echo "rl${rl_base/#sft/}: $(basename "$c") of max_steps $(grep -m1 -E '^max_steps:' "$rl_config" | awk '{print $2}') (override in RL_ARGS; RL_BASE=$rl_base)"
  else echo "rl: none"; fi
  echo -n "next: "
  if [[ $gguf_rc != 0 ]]; then echo "carry the missing GGUF part(s) above (STAGE=corpus while no SFT exists, else STAGE=carry)"
  elif [[ $rl_base == sftfull && -n $(ls "$out/rl_state" 2>/dev/null) ]]; then
    echo "fetch rl_state/ (RL's adapter on the full SFT model), then RL_BASE=sftfull STAGE=rl again (or STAGE=eval MODELS=\"sftfull rlfull\")"
  elif [[ $rl_base == sftfull ]] && sft_trained "$full_dir"; then echo "RL_BASE=sftfull STAGE=rl, or STAGE=eval MODELS=\"sftfull rlfull\""
  elif [[ ! -f $sft_dir/adapter_model.safetensors ]] && sft_trained "$full_dir"; then
    echo "STAGE=eval MODELS=sftfull (the full SFT model is evaluated here), or STAGE=sft for the LoRA adapter"
  elif [[ ! -f $sft_dir/adapter_model.safetensors ]]; then echo "STAGE=sft (resumes); then fetch sft_adapter/ and tasks.tgz"
  elif [[ -n $(ls "$out/rl_state" 2>/dev/null) ]]; then echo "fetch rl_state/ (the run's only copy off this machine), then STAGE=rl again while the machine is warm (or STAGE=eval)"
  else echo "STAGE=rl"; fi
} > "$out/next.txt" 2>&1
cp "$out/next.txt" "$logs/"
tar czf "$out/logs.tgz" -C "$work" logs 2>/dev/null
cat "$out/next.txt"
exit $rc
