"""A pool's Triton seed: the first warm process's trusted start-up artifacts copied into later processes."""

import json
import os

from kernelgym.worker.triton_seed import TritonSeed, seeding_enabled


def _triton_cache(cache_dir, key, files, group=None):
    """Write a cache entry the way Triton's FileCacheManager lays it out (`<dir>/<key>/<file>`)."""
    entry = cache_dir / key
    entry.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (entry / name).write_bytes(data)
    if group:
        (entry / f"__grp__{group}").write_text(json.dumps({"child_paths": {n: str(entry / n) for n in files}}))


def test_the_seed_is_planted_with_its_group_paths_pointing_at_the_new_cache(tmp_path):
    first = tmp_path / "warm-a"
    _triton_cache(first / "triton", "k1", {"cuda_utils.so": b"\x7fELF-utils"})
    _triton_cache(first / "triton", "k2", {"warm.cubin": b"cubin", "warm.json": b"{}"}, group="warm.json")
    (first / "triton" / "k2" / "lock").write_text("")
    (first / "triton" / "k2" / "tmp.pid_1_x").mkdir()  # a half-written entry of Triton's
    (first / "triton" / "k2" / "tmp.pid_1_x" / "partial.cubin").write_bytes(b"half")
    seed = TritonSeed(tmp_path)
    assert seed.plant(tmp_path / "early") == 0  # no seed yet: nothing copied
    assert seed.harvest(first) and seed.ready
    assert not seed.harvest(tmp_path / "warm-b")  # taken once

    later = tmp_path / "warm-c"
    assert seed.plant(later) == 4  # two artifacts, the metadata and its group; no lock, no tmp entry
    target = later / "triton"
    assert (target / "k1" / "cuda_utils.so").read_bytes() == b"\x7fELF-utils"
    assert not (target / "k2" / "lock").exists() and not (target / "k2" / "tmp.pid_1_x").exists()
    group = json.loads((target / "k2" / "__grp__warm.json").read_text())["child_paths"]
    assert group == {"warm.cubin": str(target / "k2" / "warm.cubin"), "warm.json": str(target / "k2" / "warm.json")}
    assert all(os.path.exists(p) for p in group.values())
    # a copy, not a link: what one process writes into its cache stays its own
    (target / "k1" / "cuda_utils.so").write_bytes(b"changed")
    assert (seed.dir / "k1" / "cuda_utils.so").read_bytes() == b"\x7fELF-utils"


def test_an_empty_start_up_cache_makes_no_seed(tmp_path):
    (tmp_path / "warm-a" / "triton").mkdir(parents=True)
    seed = TritonSeed(tmp_path)
    assert not seed.harvest(tmp_path / "warm-a") and not seed.ready


def test_triton_finds_a_planted_group(tmp_path, monkeypatch):
    # Triton's own cache manager, pointed at the planted copy, resolves every file of the group
    from triton.runtime.cache import FileCacheManager

    first = tmp_path / "warm-a"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(first / "triton"))
    manager = FileCacheManager("abc")
    paths = {name: manager.put(data, name) for name, data in (("k.cubin", b"c"), ("k.json", "{}"))}
    manager.put_group("k.json", paths)
    seed = TritonSeed(tmp_path)
    assert seed.harvest(first)
    later = tmp_path / "warm-b"
    seed.plant(later)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(later / "triton"))
    group = FileCacheManager("abc").get_group("k.json")
    assert group == {"k.cubin": str(later / "triton" / "abc" / "k.cubin"), "k.json": str(later / "triton" / "abc" / "k.json")}


def test_seeding_is_on_by_default_on_gpus_only_and_can_be_turned_off(monkeypatch):
    monkeypatch.delenv("KERNELGYM_TRITON_SEED", raising=False)
    assert seeding_enabled("cuda:0") and not seeding_enabled("cpu")
    monkeypatch.setenv("KERNELGYM_TRITON_SEED", "0")
    assert not seeding_enabled("cuda:0")
    monkeypatch.setenv("KERNELGYM_TRITON_SEED", "1")
    assert seeding_enabled("cuda:0") and not seeding_enabled("cpu")
