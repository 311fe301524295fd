"""Triton's build artifacts of a warm process's trusted start-up, shared with the pool's later processes.

Every candidate process has a private Triton cache (an answer must not reach another's artifacts), so on a
GPU each one built, before any answer existed, the same three things with a C compiler and LLVM: Triton's
CUDA helper module (`cuda_utils`, gcc), the warm-up kernel (`kernelgym.judge.triton_warmup`) and its launcher
(gcc again). Two processes per evaluation paid that each time (issue 26: ~28 s of host CPU per evaluation on
an H100 host, which bounds the throughput, not the GPU).

A `TritonSeed` takes the cache of the first process of a pool that finished its warm-up (trusted code only
has run in it: it is idle before its first request) and copies it into the private cache of every process
the pool starts later, before that process starts. Copies, not links: what a process writes into its own
cache stays its own. Triton's group files record absolute paths, so they are rewritten for each copy.
On by default on GPUs since a GPU run measured it (4 x H200 host, the 40-answer bench, 8 in flight, ninth session:
answer-process start-up 2.16 -> 1.46 CPU-s, replay start-up 2.12 -> 1.43, 39.1 -> 42.9 evaluations/min, the
same verdicts); `KERNELGYM_TRITON_SEED=0` turns it off.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path

ENV = "KERNELGYM_TRITON_SEED"
_PLACEHOLDER = "@KERNELGYM_TRITON_SEED@"
_CACHE_SUBDIR = "triton"  # a candidate process's TRITON_CACHE_DIR under its scratch (candidate_env.child_env)
_MAX_SEED_BYTES = 64 << 20  # a start-up's cache is a few MiB; anything larger is not what we expect to copy


def seeding_enabled(device: str) -> bool:
    """Whether pools on `device` share their first warm process's Triton cache (GPUs only; KERNELGYM_TRITON_SEED=0: no)."""
    return device != "cpu" and os.environ.get(ENV, "1") != "0"


class TritonSeed:
    """The seed of one pool, kept under `root` (the pool's scratch root)."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "triton-seed"
        self._lock = threading.Lock()
        self.ready = False

    def harvest(self, scratch: Path) -> bool:
        """Take the cache of a process that ran only trusted code (a warm process, ready, not handed out) as
        the seed, once. True when this call made the seed."""
        with self._lock:
            if self.ready:
                return False
            source = scratch / _CACHE_SUBDIR
            files = [p for p in source.rglob("*") if p.is_file()] if source.is_dir() else []
            if not files or sum(p.stat().st_size for p in files) > _MAX_SEED_BYTES:
                return False
            try:
                self.dir.parent.mkdir(parents=True, exist_ok=True)
                tmp = Path(tempfile.mkdtemp(prefix="triton-seed-", dir=self.dir.parent))
            except OSError:
                return False
            try:
                for path in files:
                    rel = path.relative_to(source)
                    if any(part.startswith("tmp.") for part in rel.parts) or rel.name == "lock":
                        continue  # a half-written entry or a lock file: Triton's, not an artifact
                    dest = tmp / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    if rel.name.startswith("__grp__"):
                        dest.write_text(path.read_text().replace(str(source), _PLACEHOLDER))
                    else:
                        shutil.copyfile(path, dest)
                os.replace(tmp, self.dir)
            except OSError:
                shutil.rmtree(tmp, ignore_errors=True)
                return False
            self.ready = True
            return True

    def plant(self, scratch: Path) -> int:
        """Copy the seed into `scratch`'s Triton cache before its process starts; the files copied (0: no seed)."""
        if not self.ready:
            return 0
        target = scratch / _CACHE_SUBDIR
        copied = 0
        for path in self.dir.rglob("*"):
            if not path.is_file():
                continue
            dest = target / path.relative_to(self.dir)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if path.name.startswith("__grp__"):
                dest.write_text(path.read_text().replace(_PLACEHOLDER, str(target)))
            else:
                shutil.copyfile(path, dest)
            copied += 1
        return copied
