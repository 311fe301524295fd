"""The environment a candidate process runs in, whether exec'd (`sandbox`) or forked (`forkserver`).

Below both, so that the fork server does not import the sandbox that starts it.
"""

from __future__ import annotations

import os
from pathlib import Path

# Every process an evaluation starts carries MARKER_VAR=<its marker>: how `sandbox.kill_marked`
# finds what an answer leaves running (RH-27).
MARKER_VAR = "KERNELGYM_EVAL"
# Confinement (`confine`) is on unless the judge's own environment says KERNELGYM_CONFINE=0
# (debugging); the child reads the judge's choice from its environment before the answer runs.
CONFINE_VAR = "KERNELGYM_CONFINE"
# torch's intra-op threads in each candidate process: KERNELGYM_CANDIDATE_THREADS in the judge's environment,
# default 1; 0 leaves torch's own choice (one per core). With 8-16 evaluations in flight per GPU, two candidate
# processes each, pools of one thread per core per process would oversubscribe the host many times over; on a
# GPU a candidate's host tensor work is small, under the CPU interpreter it is most of the work (issue 26).
THREADS_VAR = "KERNELGYM_CANDIDATE_THREADS"
_SECRET_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "API_KEY", "ACCESS_KEY", "CREDENTIAL")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def child_env(scratch: Path, device: str) -> dict[str, str]:
    """The environment of a candidate process in `scratch` on `device`: this one's without
    credentials, with private HOME, TMPDIR and compiler caches, Triton's interpreter on CPU."""
    env = {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}
    for sub in ("tmp", "triton", "inductor"):
        (scratch / sub).mkdir(exist_ok=True)
    env.update(
        HOME=str(scratch),
        TRITON_HOME=str(scratch),  # Triton's other dirs (dumps, overrides) default under it
        TMPDIR=str(scratch / "tmp"),
        TRITON_CACHE_DIR=str(scratch / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p),
        **{CONFINE_VAR: "0" if os.environ.get(CONFINE_VAR) == "0" else "1"},
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
    return env


def candidate_threads() -> int:
    """How many intra-op threads a candidate process gives torch (`THREADS_VAR`; 0: torch's default)."""
    try:
        return max(0, int(os.environ.get(THREADS_VAR, "1")))
    except ValueError:
        return 1


def limit_host_threads() -> int:
    """In a candidate process, before any parallel region: torch's intra-op threads as `candidate_threads` says.
    torch's count afterwards."""
    import torch

    if candidate_threads():
        torch.set_num_threads(candidate_threads())
    return torch.get_num_threads()
