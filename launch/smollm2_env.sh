# Sourced by GPU checks that need SmolLM2-135M-Instruct and the training wheels (train_check.sh,
# coldstart_check.sh). Reassembles the GGUF from the halves carried in .carry/smollm2 (a call that
# carries one half keeps it in $STASH and returns 3: carry the other in the next call while the
# machine is warm), installs .whl/train into /tmp/site, and exports PYTHONPATH and
# KERNELGYM_SMOLLM2_GGUF. Sets SMOLLM2_GGUF to the file.
stash="${STASH:-/tmp/kernelgym_carry}"; mkdir -p "$stash"
gguf=SmolLM2-135M-Instruct.Q4_1.gguf
smollm2_setup() {
  local f p missing=""
  for f in .carry/smollm2/"$gguf".part* .carry/smollm2/"$gguf".sha256; do
    [[ -f $f ]] && cp "$f" "$stash/"
  done
  if [[ ! -f $stash/$gguf ]]; then
    for p in part0 part1 sha256; do [[ -f $stash/$gguf.$p ]] || missing+=" $gguf.$p"; done
    if [[ -n $missing ]]; then
      echo "stashed in $stash: $(cd "$stash" && ls | tr '\n' ' ')"
      echo "still missing:$missing -- carry them (with .whl/train) in the next call, while this machine is warm"
      return 3
    fi
    cat "$stash/$gguf.part0" "$stash/$gguf.part1" > "$stash/$gguf"
    (cd "$stash" && sha256sum -c "$gguf.sha256") || { rm -f "$stash/$gguf"; echo "GGUF checksum mismatch"; return 1; }
    rm -f "$stash/$gguf.part0" "$stash/$gguf.part1"
  fi
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
  export PYTHONPATH="/tmp/site:$PWD" PYTHONUNBUFFERED=1 TRL_EXPERIMENTAL_SILENCE=1 KERNELGYM_SMOLLM2_GGUF="$stash/$gguf"
  SMOLLM2_GGUF="$stash/$gguf"
}
