#!/usr/bin/env bash
# The generation speed check (issue 16, item 4): the fast decoder's tests on the GPU, then
# `python -m kernelgym.generation.bench` for both backends on SmolLM2-135M's architecture (random
# weights) at batch 128 x 768 new tokens after 512-token prompts. JSON and the log go to
# ${OUT:-generate_bench_out}/. Takes about 2-3 minutes on an H100, most of it model.generate.
# Usage: bash launch/generate_bench_check.sh
#   (MODEL, BATCH, NEW_TOKENS, PROMPT_TOKENS, EXTRA_MODELS override; HF=0 skips the model.generate run)
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
out="${OUT:-generate_bench_out}"; mkdir -p "$out"
log="$out/generate_bench.log"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
} 2>&1 | tee "$log"

rc=0
if python -c "import pytest" 2>/dev/null; then
  timeout 120 python -m pytest -q -p no:cacheprovider tests/generation/test_fast_decode.py 2>&1 | tee -a "$log" || rc=1
else
  echo "pytest not installed: tests skipped" | tee -a "$log"
fi

shape=(--batch "${BATCH:-128}" --new-tokens "${NEW_TOKENS:-768}" --prompt-tokens "${PROMPT_TOKENS:-512}")
model="${MODEL:-random:smollm2-135m}"
timeout 120 python -m kernelgym.generation.bench --backend fast --model "$model" "${shape[@]}" --repeats 2 \
  --json "$out/generate_fast.json" 2>&1 | tee -a "$log" || rc=1
for extra in ${EXTRA_MODELS:-random:qwen2.5-0.5b}; do
  timeout 120 python -m kernelgym.generation.bench --backend fast --model "$extra" "${shape[@]}" \
    --json "$out/generate_fast_${extra#random:}.json" 2>&1 | tee -a "$log" || rc=1
done
[[ ${HF:-1} == 0 ]] || timeout 200 python -m kernelgym.generation.bench --backend hf --model "$model" "${shape[@]}" \
  --json "$out/generate_hf.json" 2>&1 | tee -a "$log" || rc=1
exit $rc
