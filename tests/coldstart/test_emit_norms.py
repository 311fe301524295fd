"""The norm, channel-softmax and pooling emitters: answers written by construction pass the judge.

One judged batch (CPU interpreter) covers every op of the two families, each dtype, fused epilogues,
and the looping paths (block caps shrunk so that the small CPU sizes need several chunks)."""

from __future__ import annotations

import pytest
import torch

from kernelgym.coldstart import emit_norms, emit_pool
from kernelgym.coldstart.answer import write_answer
from kernelgym.coldstart.emitters import EMITTERS, EPILOGUE_OPS
from kernelgym.judge.static_checks import analyse
from kernelgym.taskgen.compose import compose_chain

NORM_OPS = ("layer_norm", "rms_norm", "batch_norm1d", "batch_norm2d", "instance_norm", "group_norm",
            "softmax_channels")
POOL_OPS = ("global_avg_pool", "max_pool2d", "avg_pool2d", "max_pool1d", "avg_pool1d")
RANKS = {"layer_norm": (2, 3), "rms_norm": (2, 3), "batch_norm1d": (2,), "max_pool1d": (3,), "avg_pool1d": (3,)}

# (ops, rank, dtype, seed, shrink the block caps so that every row/channel loop takes several chunks)
JUDGED = [
    ("layer_norm,relu", 3, "float16", 11, True),
    ("batch_norm2d,add_bias,max_pool2d", 4, "float32", 3, False),
    ("group_norm,global_avg_pool,add_bias", 4, "bfloat16", 5, True),
    ("instance_norm,avg_pool2d,softmax_channels,mul_input", 4, "float32", 7, True),
    ("rms_norm,max_pool1d,avg_pool1d", 3, "bfloat16", 2, False),
    ("batch_norm1d,mul_input,relu", 2, "float16", 7, True),
]


def _small_caps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(emit_norms, "ROW_CAPS", (8, 16))
    monkeypatch.setattr(emit_norms, "BN_CAPS", (8, 16))
    monkeypatch.setattr(emit_norms, "BN_ROW_CAPS", (2, 4))
    monkeypatch.setattr(emit_norms, "SOFTMAX_C_CAPS", (2, 4))
    monkeypatch.setattr(emit_pool, "GAP_CAPS", (4, 8))


def test_registered_with_epilogues():
    for op in (*NORM_OPS, *POOL_OPS):
        assert op in EMITTERS and op in EPILOGUE_OPS


def test_rms_norm_default_eps_is_float32_eps_for_half_types():
    assert emit_norms.RMS_EPS == torch.finfo(torch.float32).eps
    x = torch.randn(3, 16, dtype=torch.float16) * 1e-3
    xf = x.float()
    ref = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + emit_norms.RMS_EPS)).half()
    assert torch.equal(torch.nn.RMSNorm(16).half()(x), ref)


@pytest.mark.parametrize("op", NORM_OPS + POOL_OPS)
def test_answers_keep_the_contract(op: str):
    """Every style draw of every dtype and rank: the answer parses and the static rules find nothing."""
    written = 0
    for rank in RANKS.get(op, (4,)):
        for seed in range(8):
            dtype = ("float32", "float16", "bfloat16")[seed % 3]
            for ops in ([op], [op, "relu", "add_bias"]):
                try:
                    candidate = compose_chain(ops, rank, dtype, seed=seed, index=seed)
                except ValueError:
                    continue
                report = analyse(write_answer(candidate, seed=seed))
                assert not report.violations and not report.verdicts, (ops, seed, dtype, report)
                written += 1
    assert written >= 6


def test_judged_chains_are_ok(monkeypatch: pytest.MonkeyPatch):
    from kernelgym.judge import JudgeConfig
    from kernelgym.judge.batch import judge_many

    pairs = []
    for ops, rank, dtype, seed, shrink in JUDGED:
        with monkeypatch.context() as m:
            if shrink:
                _small_caps(m)
            candidate = compose_chain(ops.split(","), rank, dtype, seed=seed, index=seed)
            pairs.append((candidate.task(), write_answer(candidate, seed=seed)))
    results = judge_many(pairs, JudgeConfig(device="cpu", seed=0), jobs=2, progress=False)  # seeded: no flaky draws
    bad = [(spec[0], spec[2], r.status, (r.message or "")[:300]) for spec, r in zip(JUDGED, results)
           if r.status.value != "ok"]
    assert not bad, bad
