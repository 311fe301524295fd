"""Gate a GPU session's training on the judge: exit 0 only when a throughput run of this code judged its
mixed batch as the mix expects (every answer's verdict the one its kind stands for, none missing).

A judge broken on the GPU (a confinement layer that stops CUDA, a child that cannot import) turns every
verdict into system_error, and RL on such rewards learns nothing and wastes the session. Usage, after
`launch/judge_throughput_check.sh` wrote its archive:

    python3 launch/judge_gate.py /tmp/fu/out/throughput.tgz && bash launch/rl_detached.sh start follow
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path


def verdicts(archive: Path) -> list[tuple[str, dict, list]]:
    """(report name, statuses, unexpected verdicts) of every service mode in the archive's bench reports."""
    out = []
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            name = Path(member.name).name
            if not (member.isfile() and name.startswith("bench_") and name.endswith(".json")):
                continue
            report = json.loads(tar.extractfile(member).read())
            for mode in report.get("modes", []):
                out.append((f"{name}: {mode.get('mode', '?')}", mode.get("statuses", {}), mode.get("unexpected", [])))
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__)
        return 2
    archive = Path(argv[0])
    if not archive.is_file():
        print(f"judge gate: no {archive}: the throughput run did not finish; not starting")
        return 1
    try:
        found = verdicts(archive)
    except (tarfile.TarError, json.JSONDecodeError, OSError) as e:
        print(f"judge gate: cannot read {archive}: {e}; not starting")
        return 1
    if not found:
        print(f"judge gate: no bench report in {archive}; not starting")
        return 1
    bad = False
    for name, statuses, unexpected in found:
        judged = sum(statuses.values())
        print(f"judge gate: {name}: {judged} judged {statuses}, {len(unexpected)} unexpected")
        for line in unexpected[:5]:
            print(f"  unexpected: {line}")
        bad = bad or bool(unexpected) or judged == 0
    print("judge gate: " + ("FAILED: not starting" if bad else "passed"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
