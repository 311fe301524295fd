#!/usr/bin/env bash
# GPU check of the compiled-IR pointer rule (launch_hook.forged_pointer_ops): an honest null test of an
# optional pointer (FlagGems batch norm) is judged, the forging exploits stay refused. One GPU, ~2 min.
cd "$(dirname "$0")/.." && export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1
judge() {  # TASK FILE
  timeout 100 python -m kernelgym.cli judge "$1" "$2" --device cuda --engine replay --json --no-compile-baseline 2>/dev/null |
    python -c "import json,sys; r=json.load(sys.stdin); print(sys.argv[1], r['status'], r['message'][:160])" "$(basename "$2")"
}
judge batch_norm_inference tests/redteam/external/fg_batch_norm_inference.py &
judge relu tests/redteam/exploits/rh21_relu_int_to_ptr_repairs_outputs.py &
judge relu tests/redteam/exploits/rh21_relu_v4e_forged_pointer_after_clean_launch.py &
judge tanh_activation tests/redteam/exploits/rh06_tanh_inline_asm.py &
wait
