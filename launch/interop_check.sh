#!/usr/bin/env bash
# The adapters against the real framework packages, on CPU: one venv per framework at the lowest and the
# highest version each adapter claims, tests/env/test_interop.py run in each against one served KernelGym
# (real judge, CPU interpreter), plus OpenEnv's own runtime validation of that server.
#
#   bash launch/interop_check.sh                 # all frameworks; results under $OUT_DIR
#   ONLY="vf sky" bash launch/interop_check.sh   # a subset (names below)
#   FROM_ENV=1 bash launch/interop_check.sh      # also OpenEnv's from_env (uv; pulls CUDA torch, ~3.7 GB)
#
# Venvs are kept under $VENV_ROOT and reused (REUSE=0 rebuilds them). The server runs from the repo's
# .venv (pip install -e ".[cpu,dev]"). Results: $OUT_DIR/results.tsv (name, versions, rc, seconds) and logs.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PY=${PYTHON:-python3.11}
VENV_ROOT=${VENV_ROOT:-/tmp/kg-interop}
OUT_DIR=${OUT_DIR:-runs/interop/$(date +%Y%m%d-%H%M%S)}
PORT=${PORT:-8017}
REUSE=${REUSE:-1}
ONLY=${ONLY:-"trl116 vf040 sky040 verl060 verl071 verl080 verl091"}
TORCH_CPU=${TORCH_CPU:-torch==2.13.0}  # pip's --find-links (/opt/wheels here) supplies the +cpu build
SERVER_PY=${SERVER_PY:-$ROOT/.venv/bin/python}
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
mkdir -p "$OUT_DIR" "$VENV_ROOT"

# name | what to install (beside kernelgym) | kernelgym extras | pytest -k | a second pip install's arguments
# The verl pins are docs/ENVIRONMENT.md's install lines ("verl-install"), which the recipe test checks against the venv.
SPECS=(
  "trl116|trl==1.16.0 transformers>=5.2|openenv,cpu|trl|"
  # no openenv 0.10 here (mcp 2 vs mcp<2): uses the URL; uv runs the chat program of vf-eval's null harness
  "vf040|verifiers[openenv]==0.4.0 uv||verifiers|"
  # skyrl-train 0.3.1 asks for Python 3.12 and flash-attn (a CUDA build); its Hydra config is all the test reads
  "sky040|skyrl-gym==0.4.0 hydra-core==1.3.2|openenv,cpu|skyrl|--no-deps --ignore-requires-python skyrl-train==0.3.1"
  "verl060|verl==0.6.0 pyarrow<26|openenv,cpu|verl|transformers<5 datasets<5"  # against openenv's huggingface_hub>=1.29
  "verl071|verl==0.7.1 pyarrow<26|openenv,cpu|verl|"
  "verl080|verl==0.8.0 pyarrow<26|openenv,cpu|verl|"
  "verl091|verl==0.9.1|openenv,cpu|verl|"
)

"$SERVER_PY" -m kernelgym.cli env serve --device cpu --tasks relu --max-turns 2 --max-sessions 2 --port "$PORT" \
  > "$OUT_DIR/server.log" 2>&1 &
SERVER_PID=$!
trap 'kill $SERVER_PID 2>/dev/null' EXIT
URL=http://127.0.0.1:$PORT
for _ in $(seq 180); do curl -sf "$URL/health" >/dev/null && break; sleep 1; done
curl -sf "$URL/health" >/dev/null || { echo "server did not start: $OUT_DIR/server.log"; exit 1; }

printf "name\tversions\trc\tseconds\tsummary\n" > "$OUT_DIR/results.tsv"
record() { printf "%s\t%s\t%s\t%s\t%s\n" "$@" >> "$OUT_DIR/results.tsv"; echo "$*"; }

# OpenEnv's own runtime validation of the running server.
start=$(date +%s)
"$(dirname "$SERVER_PY")/openenv" validate --url "$URL" --level runtime --json > "$OUT_DIR/openenv_validate.json" 2>&1
rc=$?
record openenv-validate "openenv $("$SERVER_PY" -c 'import importlib.metadata as m; print(m.version("openenv"))')" \
  "$rc" $(( $(date +%s) - start )) "$("$SERVER_PY" -c "import json,sys; s=json.load(open(sys.argv[1]))['summary']; print(f\"{s['passed_count']}/{s['total_count']} criteria\")" "$OUT_DIR/openenv_validate.json" 2>/dev/null)"

for spec in "${SPECS[@]}"; do
  IFS='|' read -r name pkgs extras key then <<< "$spec"
  [[ " $ONLY " == *" $name "* ]] || continue
  venv=$VENV_ROOT/$name
  start=$(date +%s)
  if [[ $REUSE != 1 || ! -x $venv/bin/pytest ]]; then
    rm -rf "$venv"
    target="$ROOT"; [[ -n $extras ]] && target="$ROOT[$extras]"
    torch=(); [[ $extras == *cpu* ]] && torch=("$TORCH_CPU")
    # shellcheck disable=SC2086
    if ! { "$PY" -m venv "$venv" && "$venv/bin/pip" install -q "${torch[@]}" $pkgs -e "$target" pytest pytest-timeout &&
           { [[ -z $then ]] || "$venv/bin/pip" install -q $then; }; } \
        > "$OUT_DIR/$name.install.log" 2>&1; then
      record "$name" "$pkgs" install-failed $(( $(date +%s) - start )) "$(grep -E '^ERROR' "$OUT_DIR/$name.install.log" | head -1)"
      continue
    fi
  fi
  versions=$("$venv/bin/python" -c "
import importlib.metadata as m
names = ('trl', 'transformers', 'verifiers', 'skyrl-gym', 'skyrl-train', 'verl', 'pyarrow', 'openenv', 'torch')
print(' '.join(f'{n} {m.version(n)}' for n in names if any(True for _ in m.distributions(name=n))))")
  KERNELGYM_INTEROP_URL=$URL "$venv/bin/python" -m pytest -q -p no:cacheprovider -rs tests/env/test_interop.py -k "$key" \
    > "$OUT_DIR/$name.pytest.log" 2>&1
  rc=$?
  record "$name" "$versions" "$rc" $(( $(date +%s) - start )) "$(tail -1 "$OUT_DIR/$name.pytest.log")"
done

if [[ ${FROM_ENV:-0} == 1 ]]; then
  # OpenEnv's from_env starts the packaged environment with `uv run --project`; the copy points its
  # kernelgym source at this checkout (the package's own path is relative to it).
  start=$(date +%s)
  proj=$VENV_ROOT/openenv_env && rm -rf "$proj" && cp -r kernelgym/env/openenv_env "$proj"
  sed -i "s|path = \"../../..\"|path = \"$ROOT\"|" "$proj/pyproject.toml"
  [[ -x $VENV_ROOT/uv/bin/uv ]] || { "$PY" -m venv "$VENV_ROOT/uv" && "$VENV_ROOT/uv/bin/pip" install -q uv; }
  PATH=$VENV_ROOT/uv/bin:$PATH UV_FIND_LINKS=${UV_FIND_LINKS:-/opt/wheels} "$SERVER_PY" - "$proj" > "$OUT_DIR/from_env.log" 2>&1 <<'EOF'
import sys
from openenv.core import GenericEnvClient
with GenericEnvClient.from_env("kernelgym", use_docker=False, project_path=sys.argv[1], context_timeout_s=1200.0,
                               env_vars={"KERNELGYM_TASKS": "relu", "OMP_NUM_THREADS": "1"}).sync() as client:
    first = client.reset(task="relu")
    step = client.step({"answer": "no code"})
    assert [m["role"] for m in first.observation["messages"]] == ["system", "user"] and step.done is False
    print("from_env: reset and step ok,", step.observation["metadata"]["result"]["status"])
EOF
  rc=$?
  record from_env "uv $("$VENV_ROOT/uv/bin/uv" --version | cut -d' ' -f2)" "$rc" $(( $(date +%s) - start )) "$(tail -1 "$OUT_DIR/from_env.log")"
fi
echo "results: $OUT_DIR/results.tsv"
