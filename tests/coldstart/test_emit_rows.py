"""The row-op, reduction, glu and loss emitters: answers written by construction pass the judge.

One judged batch (CPU interpreter) covers every op of the two files across fp32/fp16/bf16, fused
epilogues, ops before and after other families, and the looping paths (block caps shrunk so that
the small CPU rows need several chunks)."""

from __future__ import annotations

import pytest

from kernelgym.coldstart import emit_rows
from kernelgym.coldstart.answer import write_answer
from kernelgym.coldstart.emit_losses import LOSSES
from kernelgym.coldstart.emitters import EMITTERS, EPILOGUE_OPS
from kernelgym.judge.static_checks import analyse
from kernelgym.taskgen.compose import compose_chain

ROW_OPS = emit_rows.ROW_OPS + ("glu",)
ALL_OPS = ROW_OPS + emit_rows.REDUCTIONS + LOSSES
RANKS = {"glu": (2, 3), "cross_entropy": (2,), **{op: (2, 3) for op in LOSSES if op != "cross_entropy"}}

# (ops, rank, dtype, seed, block cap: small enough that the small rows take several chunks, 0 to keep
# the drawn caps, which fit every small row in one). Losses
# end a chain, so six chains cover six of the eight losses (mse and l1 are smooth_l1's simpler
# siblings); every row op and reduction is in one, each dtype, fused epilogues (seeds 3 and 4 draw
# fuse_epilogue), a matmul before a row op, reductions feeding row ops and losses.
JUDGED = [
    ("softmax,add_bias,amax,kl_div", 4, "float16", 3, 8),
    ("linear,l2_normalize,relu,glu,cross_entropy", 2, "float32", 4, 32),
    ("cumsum,log_softmax,center,mul_input,sum,bce_with_logits", 3, "float32", 4, 8),  # bf16: ill-conditioned
    ("logsumexp,vector_norm,cosine_loss", 4, "float32", 3, 0),
    ("var,gelu,smooth_l1_loss", 3, "bfloat16", 5, 0),
    ("glu,mean,huber_loss", 3, "float16", 8, 8),
]


def test_registered():
    for op in ALL_OPS:
        assert op in EMITTERS
    assert set(ROW_OPS) <= EPILOGUE_OPS
    assert not (set(emit_rows.REDUCTIONS) | set(LOSSES)) & EPILOGUE_OPS


@pytest.mark.parametrize("op", ALL_OPS)
def test_answers_keep_the_contract(op: str):
    """Style draws of every dtype and rank: the answer parses and the static rules find nothing."""
    written = 0
    for rank in RANKS.get(op, (2, 3, 4)):
        for seed, dtype in enumerate(("float32", "float16", "bfloat16", "float32")):
            for ops in ([op], ["relu", op, "add_bias"]):
                try:
                    candidate = compose_chain(ops, rank, dtype, seed=seed, index=seed)
                except ValueError:
                    continue
                answer = write_answer(candidate, seed=seed)
                report = analyse(answer)
                assert not report.violations and not report.verdicts, (op, seed, dtype, report)
                written += 1
    assert written >= 4


def test_judged_chains_are_ok(monkeypatch: pytest.MonkeyPatch):
    from kernelgym.judge import JudgeConfig
    from kernelgym.judge.batch import judge_many

    pairs = []
    for ops, rank, dtype, seed, cap in JUDGED:
        with monkeypatch.context() as m:
            if cap:
                m.setattr(emit_rows, "CAPS", (cap,))
                m.setattr(emit_rows, "RESIDENT_CAPS", (cap,))
            candidate = compose_chain(ops.split(","), rank, dtype, seed=seed, index=seed)
            pairs.append((candidate.task(), write_answer(candidate, seed=seed)))
    results = judge_many(pairs, JudgeConfig(device="cpu", seed=0), jobs=2, progress=False)  # seeded: no flaky draws
    bad = [(spec[0], spec[2], r.status, (r.message or "")[:300]) for spec, r in zip(JUDGED, results)
           if r.status.value != "ok"]
    assert not bad, bad
