"""Checkpoints that outlive a lent machine: a peft adapter, or a trainer checkpoint around one, as parts
of at most 16 MiB with a SHA-256 manifest, and back.

A lent GPU machine returns a few files of at most 16 MiB and takes at most 64 MiB a call, and full
weights never fit. A LoRA adapter does: `split` writes the adapter (and, from a trainer checkpoint,
what resuming needs: optimizer, scheduler, RNG and trainer state) as one byte stream cut into parts,
with `manifest.json` holding each file's and each part's size and SHA-256 and the whole stream's.
`join` checks every part and every file before it writes anything, so a missing or corrupt part is
a one-line error, never a half-restored checkpoint. Tokenizer files and the training arguments are
left out (the base model brings its tokenizer; `Trainer` never reads `training_args.bin` back).

    python -m train.adapter_parts split runs/grpo_qwen_lora/checkpoint-12 --out $OUT/rl_state
    python -m train.adapter_parts verify .carry/rl_state
    python -m train.adapter_parts join .carry/rl_state --into runs/grpo_qwen_lora   # -> .../checkpoint-12
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

FORMAT = "kernelgym-adapter-parts/1"
MANIFEST = "manifest.json"
MIB = 1 << 20
MAX_PART_BYTES = 16 * MIB  # the largest file a device call returns
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
# base_model.sha256: the full SFT model an RL adapter was trained on (launch/rl_check.sh RL_BASE=sftfull)
RESUME_PATTERNS = ("trainer_state.json", "scheduler.pt", "scaler.pt", "rng_state.pth", "rng_state_*.pth",
                   "base_model.sha256")
OPTIMIZER_FILE = "optimizer.pt"
CAST_DTYPES = ("bfloat16", "float16")
_BLOCK = 1 << 22


class PartsError(ValueError):
    """The directory, the parts or the manifest are not what `split` or `join` needs; the message says why."""


@dataclass
class Entry:
    """One file of the bundle (a checkpoint file) or one part of its byte stream."""

    name: str
    size: int
    sha256: str


@dataclass
class Manifest:
    """What `split` wrote: the files of the stream in order, the parts it was cut into, and the checks."""

    name: str  # the directory's name, which `join` restores (checkpoint-12, sft_qwen_lora)
    files: list[Entry]
    parts: list[Entry]
    size: int
    sha256: str
    optimizer: bool  # optimizer.pt is in: a resume keeps the optimizer's moments
    dtype: str | None = None  # adapter tensors cast to this dtype (an adapter that is not trained further)
    global_step: int | None = None
    left_out: list[str] = field(default_factory=list)
    format: str = FORMAT

    @classmethod
    def read(cls, parts_dir: Path) -> Manifest:
        path = parts_dir / MANIFEST
        if not path.is_file():
            raise PartsError(f"{parts_dir} has no {MANIFEST}: not a directory written by "
                             "`python -m train.adapter_parts split`")
        try:
            raw = json.loads(path.read_text())
            if raw.get("format") != FORMAT:
                raise PartsError(f"{path} is format {raw.get('format')!r}, this reader knows {FORMAT!r}")
            raw["files"] = [Entry(**e) for e in raw["files"]]
            raw["parts"] = [Entry(**e) for e in raw["parts"]]
            manifest = cls(**raw)
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise PartsError(f"{path} is not a valid manifest: {e}") from None
        for entry in [*manifest.files, *manifest.parts]:
            if not _plain_name(entry.name):
                raise PartsError(f"{path} names {entry.name!r}: parts and files must be plain file names")
        if not _plain_name(manifest.name):
            raise PartsError(f"{path} names the directory {manifest.name!r}: a plain name is expected")
        return manifest

    def write(self, parts_dir: Path) -> Path:
        path = parts_dir / MANIFEST
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")
        return path


def _plain_name(name: str) -> bool:
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def bundle_files(src: Path, optimizer: bool = True, adapter_only: bool = False) -> tuple[list[Path], list[str]]:
    """(files to bundle in stream order, names left out) of an adapter or checkpoint directory."""
    if not src.is_dir():
        raise PartsError(f"{src} is not a directory: pass a saved peft adapter or a trainer checkpoint")
    missing = [n for n in ADAPTER_FILES if not (src / n).is_file()]
    if missing:
        raise PartsError(f"{src} holds no peft adapter ({', '.join(missing)} missing): train with use_peft: true, "
                         "or pass a checkpoint-N directory of such a run")
    names = sorted(p.name for p in src.iterdir() if p.is_file())
    keep = list(ADAPTER_FILES)
    if not adapter_only:
        keep += [n for n in names if any(fnmatch.fnmatch(n, pat) for pat in RESUME_PATTERNS)]
        if optimizer and OPTIMIZER_FILE in names:
            keep.append(OPTIMIZER_FILE)
    if "scheduler.pt" in keep and OPTIMIZER_FILE not in keep:
        keep.remove("scheduler.pt")  # Trainer restores the scheduler only beside the optimizer
    return [src / n for n in keep], [n for n in names if n not in keep]


def _cast_adapter(path: Path, dtype: str, tmp: Path) -> Path:
    """A copy of adapter_model.safetensors with its floating tensors in `dtype`."""
    import torch
    from safetensors.torch import load_file, save_file

    target = getattr(torch, dtype)
    tensors = {k: (v.to(target) if v.is_floating_point() else v) for k, v in load_file(path).items()}
    save_file(tensors, tmp, metadata={"format": "pt"})
    return tmp


def split(src: Path, out: Path, part_bytes: int = MAX_PART_BYTES, optimizer: bool = True,
          adapter_only: bool = False, dtype: str | None = None) -> Manifest:
    """Write `src`'s adapter (and resume files) as parts of at most `part_bytes` plus `manifest.json`
    into `out` (created; parts or a manifest already there are replaced)."""
    if not 0 < part_bytes <= MAX_PART_BYTES:
        raise PartsError(f"a part is at most {MAX_PART_BYTES // MIB} MiB (what a device call returns), "
                         f"not {part_bytes} bytes")
    if dtype is not None and (dtype not in CAST_DTYPES or not adapter_only):
        raise PartsError(f"dtype casts the adapter of an --adapter-only bundle to one of {CAST_DTYPES}, "
                         f"not {dtype!r} (a checkpoint to resume keeps its training dtype)")
    files, left_out = bundle_files(src, optimizer, adapter_only)
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("*.part[0-9][0-9]"), out / MANIFEST]:  # an earlier split's parts
        old.unlink(missing_ok=True)
    cast = None
    if dtype is not None:
        cast = _cast_adapter(files[1], dtype, out / ".cast.safetensors")
        files[1] = cast
    try:
        entries, parts, digest, total = _write_parts(files, out, src.name, part_bytes)
    finally:
        if cast is not None:
            cast.unlink(missing_ok=True)
    entries = [Entry(ADAPTER_FILES[1] if f == cast else f.name, e.size, e.sha256) for f, e in zip(files, entries)]
    step = None
    if (src / "trainer_state.json").is_file() and not adapter_only:
        step = json.loads((src / "trainer_state.json").read_text()).get("global_step")
    manifest = Manifest(name=src.name, files=entries, parts=parts, size=total, sha256=digest,
                        optimizer=any(e.name == OPTIMIZER_FILE for e in entries), dtype=dtype,
                        global_step=step, left_out=left_out)
    manifest.write(out)
    return manifest


def _write_parts(files: list[Path], out: Path, stem: str, part_bytes: int) -> tuple[list[Entry], list[Entry], str, int]:
    """Stream `files` in order into parts `stem.partNN`: (file entries, part entries, stream sha, size)."""
    whole = hashlib.sha256()
    entries: list[Entry] = []
    parts: list[Entry] = []
    part_fh, part_digest, part_len = None, hashlib.sha256(), 0

    def close_part() -> None:
        nonlocal part_fh
        if part_fh is not None:
            part_fh.close()
            parts.append(Entry(Path(part_fh.name).name, part_len, part_digest.hexdigest()))
            part_fh = None

    total = 0
    for path in files:
        digest, size = hashlib.sha256(), 0
        with path.open("rb") as fh:
            while block := fh.read(_BLOCK):
                digest.update(block)
                whole.update(block)
                size += len(block)
                while block:
                    if part_fh is None or part_len == part_bytes:
                        close_part()
                        part_fh = (out / f"{stem}.part{len(parts):02d}").open("wb")
                        part_digest, part_len = hashlib.sha256(), 0
                    take = block[: part_bytes - part_len]
                    part_fh.write(take)
                    part_digest.update(take)
                    part_len += len(take)
                    block = block[len(take):]
        entries.append(Entry(path.name, size, digest.hexdigest()))
        total += size
    close_part()
    return entries, parts, whole.hexdigest(), total


def verify(parts_dir: Path) -> Manifest:
    """The manifest, once every part is present with its size and SHA-256 and the whole stream checks;
    `PartsError` naming each missing or corrupt part otherwise."""
    manifest = Manifest.read(parts_dir)
    missing = [p.name for p in manifest.parts if not (parts_dir / p.name).is_file()]
    if missing:
        raise PartsError(f"{parts_dir} lacks {len(missing)} of {len(manifest.parts)} parts: {', '.join(missing)} "
                         "(carry or fetch every part beside manifest.json)")
    whole = hashlib.sha256()
    bad = []
    for part in manifest.parts:
        path = parts_dir / part.name
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while block := fh.read(_BLOCK):
                digest.update(block)
                whole.update(block)
        if path.stat().st_size != part.size or digest.hexdigest() != part.sha256:
            bad.append(f"{part.name} ({path.stat().st_size} bytes, sha256 {digest.hexdigest()[:12]}…; expected "
                       f"{part.size} bytes, {part.sha256[:12]}…)")
    if bad:
        raise PartsError(f"corrupt part(s) in {parts_dir}: {'; '.join(bad)}")
    if whole.hexdigest() != manifest.sha256 or sum(p.size for p in manifest.parts) != manifest.size:
        raise PartsError(f"the parts in {parts_dir} check one by one but not as a whole: the manifest does not "
                         "belong to them")
    if sum(f.size for f in manifest.files) != manifest.size:
        raise PartsError(f"{parts_dir / MANIFEST}: its files add up to another size than its parts")
    return manifest


def join(parts_dir: Path, into: Path) -> Path:
    """Restore the directory the parts came from as `into/<name>` and return it. Every check runs
    before the directory appears; a directory already there with the same files is left as it is."""
    manifest = verify(parts_dir)
    dest = into / manifest.name
    if dest.is_dir():
        if all((dest / f.name).is_file() and (dest / f.name).stat().st_size == f.size
               and sha256_file(dest / f.name) == f.sha256 for f in manifest.files):
            return dest
        raise PartsError(f"{dest} exists and differs from the parts in {parts_dir}: move it away first")
    into.mkdir(parents=True, exist_ok=True)
    tmp = into / f".{manifest.name}.joining"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        _unstream(parts_dir, manifest, tmp)
        os.replace(tmp, dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _unstream(parts_dir: Path, manifest: Manifest, dest: Path) -> None:
    """Cut the parts' stream back into the manifest's files under `dest`, checking each file's SHA-256."""
    streams = (parts_dir / p.name for p in manifest.parts)
    current = next(streams).open("rb")
    try:
        for entry in manifest.files:
            left, digest = entry.size, hashlib.sha256()
            with (dest / entry.name).open("wb") as out:
                while left:
                    block = current.read(min(left, _BLOCK))
                    if not block:
                        current.close()
                        current = next(streams).open("rb")
                        continue
                    out.write(block)
                    digest.update(block)
                    left -= len(block)
            if digest.hexdigest() != entry.sha256:
                raise PartsError(f"{entry.name} restored from {parts_dir} does not match its SHA-256")
    finally:
        current.close()


def _summary(manifest: Manifest, where: Path) -> str:
    step = f", global step {manifest.global_step}" if manifest.global_step is not None else ""
    if not any(f.name == "trainer_state.json" for f in manifest.files):
        opt = "the adapter alone" + (f" in {manifest.dtype}" if manifest.dtype else "")
    elif manifest.optimizer:
        opt = "with optimizer state"
    else:
        opt = "no optimizer state (a resume restarts the optimizer)"
    return (f"{manifest.name}: {len(manifest.files)} files, {manifest.size / MIB:.1f} MiB in {len(manifest.parts)} "
            f"part(s) in {where}, {opt}{step}, sha256 {manifest.sha256[:12]}…")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.adapter_parts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sp = sub.add_parser("split", help="an adapter or checkpoint directory -> parts + manifest.json")
    sp.add_argument("src", type=Path, help="a saved peft adapter or a trainer's checkpoint-N directory")
    sp.add_argument("--out", type=Path, required=True, help="directory for the parts and manifest.json")
    sp.add_argument("--part-mib", type=float, default=16.0, help="largest part in MiB (at most 16)")
    sp.add_argument("--no-optimizer", action="store_true",
                    help="leave optimizer.pt (and scheduler.pt) out: smaller, and a resume restarts the optimizer")
    sp.add_argument("--adapter-only", action="store_true",
                    help="the adapter alone (an SFT adapter that RL starts from), no resume files")
    sp.add_argument("--dtype", choices=CAST_DTYPES, default=None,
                    help="with --adapter-only: store the adapter's tensors in this dtype (half the size)")
    for name, text in (("verify", "check every part and the whole against manifest.json"),
                       ("join", "parts + manifest.json -> the directory they came from")):
        p = sub.add_parser(name, help=text)
        p.add_argument("parts", type=Path, help="directory holding manifest.json and the parts")
        if name == "join":
            p.add_argument("--into", type=Path, required=True, help="parent directory of the restored one")
    args = parser.parse_args(argv)
    try:
        if args.cmd == "split":
            manifest = split(args.src, args.out, int(args.part_mib * MIB), optimizer=not args.no_optimizer,
                             adapter_only=args.adapter_only, dtype=args.dtype)
            print(_summary(manifest, args.out))
        elif args.cmd == "verify":
            print("ok: " + _summary(verify(args.parts), args.parts))
        else:
            dest = join(args.parts, args.into)
            print(f"{dest}: " + _summary(Manifest.read(args.parts), args.parts))
    except (PartsError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
