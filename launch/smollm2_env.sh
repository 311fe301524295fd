# Sourced by GPU checks that need SmolLM2-135M-Instruct and the training wheels (train_check.sh,
# coldstart_check.sh). Reassembles the GGUF from the halves carried in .carry/smollm2 (a call that
# carries one half keeps it in $STASH and returns 3: carry the other in the next call while the
# machine is warm), installs .whl/train into /tmp/site, and exports PYTHONPATH and
# KERNELGYM_SMOLLM2_GGUF. Sets SMOLLM2_GGUF to the file.
stash="${STASH:-/tmp/kernelgym_carry}"; mkdir -p "$stash"
gguf=SmolLM2-135M-Instruct.Q4_1.gguf
qwen_gguf=Qwen2.5-Coder-0.5B-Instruct.tied.gguf

# _carry_gguf NAME DIR N: stash the parts of NAME carried now from DIR (NAME.part0 .. NAME.part{N-1}
# and NAME.sha256, made by `split -n N -d -a 1 NAME NAME.part`); once all are in $stash, join and
# check them. Returns 3 while parts are missing (carry them in the next calls, machine warm).
_carry_gguf() {
  local name=$1 dir=$2 n=$3 f p missing="" parts=()
  for f in "$dir/$name".part* "$dir/$name".sha256; do
    [[ -f $f ]] && cp "$f" "$stash/"
  done
  [[ -f $stash/$name ]] && return 0
  for ((p = 0; p < n; p++)); do
    parts+=("$stash/$name.part$p")
    [[ -f $stash/$name.part$p ]] || missing+=" $name.part$p"
  done
  [[ -f $stash/$name.sha256 ]] || missing+=" $name.sha256"
  if [[ -n $missing ]]; then
    echo "stashed in $stash: $(cd "$stash" && ls | tr '\n' ' ')"
    echo "still missing:$missing -- carry them (with .whl/train) in the next call, while this machine is warm"
    return 3
  fi
  cat "${parts[@]}" > "$stash/$name"
  (cd "$stash" && sha256sum -c "$name.sha256") || { rm -f "$stash/$name"; echo "GGUF checksum mismatch"; return 1; }
  rm -f "${parts[@]}"
}

smollm2_setup() {
  _carry_gguf "$gguf" .carry/smollm2 2 || return $?
  _train_wheels || return $?
  export KERNELGYM_SMOLLM2_GGUF="$stash/$gguf"
  SMOLLM2_GGUF="$stash/$gguf"
}

# Qwen2.5-Coder-0.5B-Instruct (train/qwen_coder.py writes the file; docs/COLDSTART.md): seven parts (QWEN_GGUF_PARTS)
# in .carry/qwen. Sets QWEN_GGUF and KERNELGYM_QWEN_CODER_GGUF.
qwen_setup() {
  _carry_gguf "$qwen_gguf" .carry/qwen "${QWEN_GGUF_PARTS:-7}" || return $?
  _train_wheels || return $?
  export KERNELGYM_QWEN_CODER_GGUF="$stash/$qwen_gguf"
  QWEN_GGUF="$stash/$qwen_gguf"
}

_train_wheels() {
  if [[ ! -f /tmp/site/.kernelgym_wheels ]]; then
    [[ -d .whl/train ]] || { echo "carry .whl/train (the wheels) in this call"; return 3; }
    # datasets 5.2 wants pyarrow >= 24, 4.7 (with older dill and multiprocess) pyarrow >= 21: take what the image fits.
    local arrow ds=ds4
    arrow=$(python3 -c "import pyarrow; print(pyarrow.__version__.split('.')[0])" 2>/dev/null || echo 0)
    [[ $arrow -ge 24 ]] && ds=ds5
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
      .whl/train/common/*.whl .whl/train/$ds/*.whl || return 1
    touch /tmp/site/.kernelgym_wheels
  fi
  export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1
}
