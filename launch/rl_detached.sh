#!/usr/bin/env bash
# Issue 27: LoRA SFT then LoRA RL as ONE run that outlives the calls of a warm GPU machine. Cut into 10-minute
# calls, every call paid the start-up again (~150 s: the GGUF, the merge, the service) and stopped at a step
# boundary, so a session gave one RL step or two; detached, the start-up is paid once and training goes on
# between calls. Calls only start it and follow it.
#   bash launch/rl_detached.sh start     after launch/rl_check.sh calls stashed the GGUF, the training wheels and
#                                        .carry/in (STAGE=carry): rl_check.sh's STAGE=sft, then STAGE=rl, in a
#                                        session of their own (setsid) from a frozen copy of the code (runs/ is
#                                        shared with the checkout, so STAGE=eval in a later call sees it); a run
#                                        already alive is left alone
#   bash launch/rl_detached.sh follow    waits FOLLOW_SECONDS (or until the run ends), then sends back status.txt,
#                                        logs.tgz (every log, the trainer states, the curve's CSV), rl_curve.png,
#                                        followup.tgz when FOLLOWUP_TGZ names a file; FOLLOW_PARTS=1 adds rl_state/
#                                        (the newest complete checkpoint as parts: adapter and optimizer state);
#                                        FOLLOW_SFT=1 adds sft_adapter/ and tasks.tgz once SFT is done (what a later
#                                        machine needs to go on with RL: SFT_PARTS, TASKS_TGZ of rl_check.sh prepare)
#   bash launch/rl_detached.sh start follow   both, in one call
# env: DETACHED_SFT_STAGE=sft (sftfull: full fine-tuning instead of LoRA, evaluated on the machine; RL after it
#      trains its LoRA on that full model: rl_check.sh's RL_BASE=sftfull, runs/grpo_qwen_lora_full, MODELS=rlfull)
#      DETACHED_SFT_SECONDS=900 DETACHED_RL_SECONDS=1500 (each stage's training time; a stage that has finished
#      is not run again; DETACHED_RL_SECONDS=0: no RL, the run ends when the SFT's eval does), SFT_ARGS RL_ARGS and the rest of rl_check.sh's, FOLLOW_SECONDS=540 (timeout_s 600);
#      DETACHED_EVAL_GPU=3: once SFT is done, rl_check.sh's eval of the SFT policy on that GPU beside RL
#      (DETACHED_EVAL_MODELS, default sft, e.g. "sft base"; DETACHED_EVAL_SETS, default kernelbench;
#      DETACHED_EVAL_SECONDS 900; give RL's service the other
#      GPUs: JUDGE_GPUS="1 2"); its runs/eval_lora_* come back
#      with every follow (evals.tgz, as far as they got)
#      DETACHED_RL_GATE=/tmp/fu/out/throughput.tgz: RL starts only once that archive of a judge throughput run
#      (started beside SFT, on another GPU) exists and launch/judge_gate.py passes it (waits up to
#      DETACHED_RL_GATE_WAIT_S=600 s; a missing or failing gate ends the run with "rl gate_failed")
# Rehearsed on a CPU with the tiny model: the rl_check.sh rehearsal's variables, JUDGE_DEVICES=cpu.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-rl_detached_out}"; mkdir -p "$out"
# rl_check.sh's own: the service and stash live there too (KG_RL_WORK: another place, for the tests' stand-in)
work="${KG_RL_WORK:-/tmp/kg_rl}"; logs="$work/logs"; mkdir -p "$logs"
pidfile="$work/detached.pid"; rcfile="$work/detached.rc"
PYTHON="${PYTHON:-python3}"
rl_dir=runs/grpo_qwen_lora
# RL on the full SFT model (DETACHED_SFT_STAGE=sftfull, or RL_BASE=sftfull given for a follow) has its own run
[[ ${DETACHED_SFT_STAGE:-} == sftfull ]] && export RL_BASE=sftfull
[[ ${RL_BASE:-sft} == sftfull ]] && rl_dir=runs/grpo_qwen_lora_full
alive() { [[ -f $pidfile ]] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }
say() { echo "$*" | tee -a "$logs/rl_detached.txt"; }

start() {
  if alive; then say "start: the detached run (pid $(cat "$pidfile")) is alive: left alone"; return 0; fi
  local sft_stage="${DETACHED_SFT_STAGE:-sft}"
  [[ $sft_stage == sft || $sft_stage == sftfull ]] || { say "start: DETACHED_SFT_STAGE is sft or sftfull, not $sft_stage"; return 2; }
  local tree; tree="$work/detached_tree_$(date +%s)"; mkdir -p "$tree" runs
  cp -a kernelgym train rewards data launch configs pyproject.toml "$tree/" || { say "start: could not copy the tree"; return 1; }
  ln -s "$PWD/runs" "$tree/runs"
  local sft_s="${DETACHED_SFT_SECONDS:-900}" rl_s="${DETACHED_RL_SECONDS:-1500}"
  rm -f "$rcfile"
  # CALL_SECONDS: rl_check.sh's hard limit, here each stage's training time + its start-up (170 s) + 25 s
  setsid env -C "$tree" OUT="$work/detached_out" bash -c "
    CALL_SECONDS=$((sft_s + 200)) SFT_SECONDS=$sft_s STAGE=$sft_stage bash launch/rl_check.sh; sft=\$?
    echo \"$sft_stage stage: exit \$sft\"; rl=skipped
    if [[ -f runs/sft_qwen_lora/adapter_model.safetensors || ( $sft_stage == sftfull && -f runs/sft_qwen_full/config.json ) ]]; then
      # SFT done (now or earlier): its eval, then RL from it (after sftfull, RL trains its LoRA on the full model)
      if [[ -n '${DETACHED_EVAL_GPU:-}' ]]; then  # the SFT policy's eval beside RL, on a GPU the service leaves
        KEEP_SERVICE=1 EVAL_GPUS='${DETACHED_EVAL_GPU:-}' MODELS='${DETACHED_EVAL_MODELS:-sft}' EVAL_SETS='${DETACHED_EVAL_SETS:-kernelbench}' \
          CALL_SECONDS=${DETACHED_EVAL_SECONDS:-900} STAGE=eval bash launch/rl_check.sh > '$logs/detached_eval.log' 2>&1 &
      fi
      gate=pass
      if [[ -n '${DETACHED_RL_GATE:-}' ]]; then  # the judge's throughput run, still running beside SFT: wait for it
        for ((i = 0; i < ${DETACHED_RL_GATE_WAIT_S:-600}; i++)); do [[ -f '${DETACHED_RL_GATE:-}' ]] && break; sleep 1; done
        '$PYTHON' launch/judge_gate.py '${DETACHED_RL_GATE:-}' || gate=fail
        echo \"judge gate before rl: \$gate\"
      fi
      if [[ \$gate == fail ]]; then
        rl=gate_failed  # rewards from a judge broken on this machine would poison the run
      elif (( $rl_s > 0 )); then  # after sftfull: RL_BASE=sftfull (exported above)
        CALL_SECONDS=$((rl_s + 200)) RL_SECONDS=$rl_s STAGE=rl bash launch/rl_check.sh; rl=\$?
      else  # DETACHED_RL_SECONDS=0: SFT and its evals only (a 1-GPU machine); the run lives until the eval ends
        rl=off; wait
      fi
    fi
    echo \"rl stage: exit \$rl\"; echo \"sft \$sft rl \$rl\" > '$rcfile'" > "$logs/detached.log" 2>&1 < /dev/null &
  echo $! > "$pidfile"
  say "start: detached run pid $! from $tree: sft up to ${sft_s} s, then rl up to ${rl_s} s of training"
}

newest_complete() {  # the newest checkpoint whose trainer state is written (a save in progress has none yet)
  local c; for c in $(ls -d "$rl_dir"/checkpoint-* 2>/dev/null | sort -t- -k2 -n -r); do
    [[ -f $c/trainer_state.json && -f $c/adapter_model.safetensors ]] && { echo "$c"; return 0; }
  done; return 1; }

follow() {
  local end=$((SECONDS + ${FOLLOW_SECONDS:-540}))
  while alive && ((SECONDS < end)); do sleep 5; done
  local snap="$work/follow_snapshot" c
  rm -rf "$snap"; mkdir -p "$snap"
  if c=$(newest_complete); then
    # a copy first: the trainer may delete this checkpoint (save_total_limit) while it is read
    cp -a "$c" "$snap/" 2>/dev/null && [[ -f $snap/$(basename "$c")/trainer_state.json ]] || {
      sleep 3; rm -rf "${snap:?}"/*; c=$(newest_complete) && cp -a "$c" "$snap/"; }
  fi
  c=$(ls -d "$snap"/checkpoint-* 2>/dev/null | head -1)
  if [[ -n $c ]]; then
    cp "$c/trainer_state.json" "$logs/rl.trainer_state.json"
    "$PYTHON" -m train.plot_curve "$c/trainer_state.json" --out "$logs/rl_curve.png" \
      --title "LoRA TRLOO from $([[ ${RL_BASE:-sft} == sftfull ]] && echo full || echo LoRA) SFT (Qwen2.5-Coder-0.5B)" >> "$logs/rl_detached.txt" 2>&1 && cp "$logs/rl_curve.png" "$out/"
    if [[ ${FOLLOW_PARTS:-0} == 1 ]]; then
      [[ -f $rl_dir/base_model.sha256 ]] && cp "$rl_dir/base_model.sha256" "$c/"  # the full SFT model it began on
      "$PYTHON" -m train.adapter_parts split "$c" --out "$out/rl_state" >> "$logs/rl_detached.txt" 2>&1 \
        || say "follow: $(basename "$c") not split: $(tail -1 "$logs/rl_detached.txt")"
    fi
  fi
  for f in runs/sft_qwen_lora*/trainer_state.json runs/sft_qwen_lora*/checkpoint-*/trainer_state.json; do
    [[ -f $f ]] && cp "$f" "$logs/sft.trainer_state.json"
  done
  for f in runs/sft_qwen_full/checkpoint-*/trainer_state.json; do [[ -f $f ]] && cp "$f" "$logs/sftfull.trainer_state.json"; done
  [[ -n ${FOLLOWUP_TGZ:-} && -f $FOLLOWUP_TGZ ]] && cp "$FOLLOWUP_TGZ" "$out/"
  if [[ ${FOLLOW_SFT:-0} == 1 ]]; then  # the SFT stage's own parts (2 x 16 MiB at most, a manifest) and tasks
    local d="$work/detached_out"
    if [[ -f $d/sft_adapter/manifest.json ]]; then cp -a "$d/sft_adapter" "$out/" && cp "$d/tasks.tgz" "$out/" 2>/dev/null
    else say "follow: FOLLOW_SFT=1 but SFT has not sent its adapter yet"; fi
  fi
  local evals; evals=$(cd runs 2>/dev/null && ls -d eval_lora_* 2>/dev/null)  # DETACHED_EVAL_GPU's, as far as it got
  [[ -n $evals ]] && tar czf "$out/evals.tgz" -C runs $evals
  {
    echo "date: $(date -u +%FT%TZ)"
    if alive; then echo "detached run: alive (pid $(cat "$pidfile"))"
    elif [[ -f $rcfile ]]; then echo "detached run: ended ($(cat "$rcfile"))"
    else echo "detached run: not running (start it)"; fi
    echo "rl: newest complete checkpoint $([[ -n $c ]] && basename "$c" || echo none)"
    [[ -n $c ]] && "$PYTHON" - "$c/trainer_state.json" <<'PY' 2>&1
import json, sys
keys = ("reward", "kernelgym/compiled", "kernelgym/correct", "kernelgym/fast_1", "timing/step_s",
        "timing/generate_s", "timing/judge_s", "timing/update_s")
for h in json.load(open(sys.argv[1])).get("log_history", []):
    if "step" in h and any(k in h for k in keys):
        print("  step", h["step"], " ".join(f"{k.split('/')[-1]}={h[k]:.3g}" for k in keys if isinstance(h.get(k), (int, float))))
PY
    grep -E '^(sft|rl|judging|corpus)' "$logs/rl_check.txt" 2>/dev/null | tail -6
    grep -h '^eval' "$logs"/eval_*.log 2>/dev/null | tail -3
    echo "--- detached.log (tail)"; tail -5 "$logs/detached.log" 2>/dev/null
    echo "--- rl.log (tail)"; tail -3 "$logs/rl.log" 2>/dev/null | cut -c1-400
  } > "$out/status.txt"
  # The judging service's verdicts of every rollout (status, speedup, message): the twelfth session's fast_1 fell
  # to 0 after the resume and nothing that came back could say whether the policy or the measurement changed.
  # A consistent copy of the live SQLite file (its backup API), gzipped in logs.tgz.
  [[ -f $work/judge.db ]] && "$PYTHON" -c "import sqlite3, sys; s = sqlite3.connect(sys.argv[1]); d = sqlite3.connect(sys.argv[2]); s.backup(d); d.close()" \
    "$work/judge.db" "$logs/judge.db" 2>> "$logs/rl_detached.txt"
  tar czf "$out/logs.tgz" -C "$work" logs 2>/dev/null
  # A call sends back 8 files and drops the rest by name: the eleventh session lost rl_state/manifest.json to
  # two files another stage of the same call wrote. The checkpoint must come back whole: the curve and the
  # evals go first (the next follow sends them again).
  local n f; n=$(find "$out" -type f | wc -l)
  for f in rl_curve.png evals.tgz; do
    ((n > 8)) && [[ -f $out/$f ]] && { rm -f "${out:?}/$f"; n=$((n - 1)); echo "follow: $f left out of this call (8 files come back)" >> "$out/status.txt"; }
  done
  ((n > 8)) && echo "follow: WARNING: $n files in \$OUT, 8 come back: $(cd "$out" && find . -type f | sort | tr '\n' ' ')" >> "$out/status.txt"
  cat "$out/status.txt"
}

(($#)) || { echo "usage: bash launch/rl_detached.sh start|follow [follow]"; exit 2; }
rc=0
for verb in "$@"; do
  case $verb in
    start) start || rc=1 ;;
    follow) follow || rc=1 ;;
    *) echo "unknown verb $verb (start, follow)"; exit 2 ;;
  esac
done
exit $rc
