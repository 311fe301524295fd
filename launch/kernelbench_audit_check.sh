#!/usr/bin/env bash
# Full-size degenerate-task audit (RH-12) of KernelBench on the GPU, at the judge's own tolerances
# and input distributions (JudgeConfig defaults): which tasks an output that computes nothing
# (zeros, constant, row mean, identity, stale, reseed) passes. Each task runs in its own time-limited
# child; rows stream to JSONL as tasks finish, so the run resumes across calls (a call is capped at
# 10 minutes): the JSONL lives in $STASH on the machine (it stays warm between calls) and is copied
# to $OUT at the end of every call, with the table of flagged tasks built from what is done so far.
#
# Usage: KB=/path/to/KernelBench bash launch/kernelbench_audit_check.sh
#   KB      a KernelBench checkout (holding KernelBench/levelN/ or levelN/); required
#   LEVELS  levels to audit (default "1 2 3"; level 4 needs transformers and the hub)
#   BUDGET  seconds this call may spend auditing before it writes what it has (default 520)
#   TASK_TIMEOUT  seconds per task (default 180)
#   AUDIT_JOBS    tasks audited at once, each in its own child (default 3; full-size tasks take up to
#                 tens of GB each: with nothing else on the GPU)
#   RETRY_LIMITS  set: audit again the tasks whose rows hit a limit (oom when run beside others)
# Run it again until the log says "all levels done"; then $OUT/kernelbench_audit.md is the table.
set -uo pipefail
cd "$(dirname "$0")/.."
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1
: "${KB:?set KB to a KernelBench checkout}"
out="${OUT:-kernelbench_audit_out}"; mkdir -p "$out"
stash="${STASH:-/tmp/kernelgym_kbaudit}"; mkdir -p "$stash"
levels="${LEVELS:-1 2 3}"
deadline=$(( $(date +%s) + ${BUDGET:-520} ))
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$out/audit.log"

for level in $levels; do
  left=$(( deadline - $(date +%s) ))
  if (( left <= 10 )); then echo "budget spent before level$level" | tee -a "$out/audit.log"; break; fi
  echo "== level$level ($left s left)" | tee -a "$out/audit.log"
  timeout --signal=INT "$left" python -m kernelgym.cli tasks audit "kernelbench:$KB:level$level" \
    --device cuda --size full --task-timeout "${TASK_TIMEOUT:-180}" --jobs "${AUDIT_JOBS:-3}" ${RETRY_LIMITS:+--retry-limits} \
    --json-out "$stash/level$level.jsonl" --resume >> "$out/audit.log" 2>&1
  echo "level$level exit $?" | tee -a "$out/audit.log"
done
cp -f "$stash"/level*.jsonl "$out"/ 2>/dev/null

python - "$KB" "$out" $levels <<'PY' | tee -a "$out/audit.log"
import json, sys
from pathlib import Path
from kernelgym.tasks.loaders import load_kernelbench_dir

kb, out, levels = sys.argv[1], Path(sys.argv[2]), [int(x) for x in sys.argv[3:]]
lines = ["# KernelBench full-size degenerate-task audit (judge tolerances and distributions)", "",
         "| level | tasks | audited | degenerate | task-only | suspicious | not audited |", "|---|---|---|---|---|---|---|"]
flagged, complete = [], True
for level in levels:
    total = len(load_kernelbench_dir(kb, level))
    path = out / f"level{level}.jsonl"
    rows = [json.loads(l) for l in path.read_text().splitlines() if l.strip()] if path.is_file() else []
    complete &= len(rows) == total
    count = lambda *v: sum(r["verdict"] in v for r in rows)
    lines.append(f"| {level} | {total} | {len(rows)} | {count('degenerate')} | {count('task-only')} | "
                 f"{count('suspicious')} | {count('too-large', 'timeout', 'oom', 'crashed', 'error')} |")
    flagged += [r for r in rows if r["verdict"] in ("degenerate", "task-only", "timeout", "oom", "crashed", "error")]
lines += ["", "| task | verdict | passing under every judge distribution | passing under task inputs | why not audited |",
          "|---|---|---|---|---|"]
for r in flagged:
    lines.append(f"| `{r['task_id']}` | {r['verdict']} | {', '.join(r['degenerate_controls']) or '-'} | "
                 f"{', '.join(r['passing'].get('task', [])) or '-'} | {(r.get('error') or '').splitlines()[0][:120] if r.get('error') else ''} |")
(out / "kernelbench_audit.md").write_text("\n".join(lines) + "\n")
print("\n".join(lines[:4 + len(levels)]))
print("all levels done" if complete else "not done yet: run the script again (it resumes)")
PY
