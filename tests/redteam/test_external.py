"""The external corpus: real-world honest Triton answers whose kernels are copied, with attribution, from
public libraries (Triton tutorials, Liger-Kernel, FlagGems; see tests/redteam/external/README.md). Every file
must be well formed, and every file the CPU interpreter can run must be judged `ok`: a verdict on one of
them is a false flag on code as people really write it."""

import pytest

from kernelgym.judge import JudgeConfig, judge
from kernelgym.judge.result import Status
from kernelgym.redteam.corpus import load_external
from kernelgym.tasks import builtin_task_ids, load_builtin

EXTERNAL = load_external()
FAMILIES = {"tt": "triton-lang/triton", "lg": "linkedin/Liger-Kernel", "fg": "FlagOpen/FlagGems"}


def test_external_corpus_is_well_formed():
    assert len(EXTERNAL) >= 51
    assert {a.task for a in EXTERNAL} <= set(builtin_task_ids())
    for a in EXTERNAL:
        assert a.source and a.licence, a.name
        assert "class ModelNew" in a.text and "triton.jit" in a.text, a.name
        family = a.name.split("_", 1)[0]
        if family in FAMILIES:
            assert FAMILIES[family] in a.source, f"{a.name}: prefix {family} but source {a.source}"
    for family in FAMILIES:
        assert sum(a.name.startswith(family + "_") for a in EXTERNAL) >= 10, family


# Real-world code the replay contract refuses, with the reason (a finding, not a false flag to hide).
KNOWN_REFUSED = {
    "lg_cross_entropy": "counts non-ignored targets with .item() on the host and asserts on the target's range with "
                        "torch: invalid_answer (since the thirteenth session no longer cheat RH-01: the result "
                        "reaches no kernel and no output)",
    "fg_residual_rms_norm_inplace": "the library op works in place and returns the input buffer it overwrote: "
                                    "invalid_answer (outputs are memory the call allocates; no longer cheat RH-10, "
                                    "since a kernel took the buffer and may have written it)",
    "lg_group_norm": "computes the variance as E[x^2] - E[x]^2 in fp32, which loses the answer on the large-common-"
                     "offset draw (wrong_output, CPU and H100 alike): a precision finding, not a false flag",
}


@pytest.mark.parametrize("answer", EXTERNAL, ids=lambda a: a.name)
def test_external_answer_is_accepted_on_cpu(answer):
    if not answer.runs_on_cpu:
        pytest.skip(f"the CPU interpreter cannot run it: {answer.cpu}")
    if answer.name in KNOWN_REFUSED:
        pytest.xfail(KNOWN_REFUSED[answer.name])
    (task,) = load_builtin(answer.task)
    # 300 s: autotuned answers run every config once in the interpreter (fg_avg_pool2d took 110 s on a loaded machine)
    result = judge(task, answer.text, JudgeConfig(device="cpu", timeout_s=300))
    assert result.status is Status.OK, (f"false flag on real-world code ({answer.source}): "
                                        f"{result.status.value}: {result.message}")
