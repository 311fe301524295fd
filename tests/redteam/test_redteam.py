"""The red-team corpus on CPU: every exploit that can run here is rejected with its expected
verdict, with all checks on and, where declared, with the static rules off (defence in depth)."""

import pytest

from kernelgym.judge import JudgeConfig
from kernelgym.redteam.corpus import Expectation, load_corpus, parse_exploit
from kernelgym.redteam.runner import run_redteam
from kernelgym.tasks import builtin_task_ids

CORPUS = load_corpus()


def test_corpus_covers_every_category_it_can():
    threats = {e.threat for e in CORPUS}
    # every category of THREATS.md has at least one exploit (RH-26, a detector, has forged-time ones)
    assert {f"RH-{i:02d}" for i in range(1, 28)} <= threats
    assert {e.task for e in CORPUS} <= set(builtin_task_ids())


@pytest.mark.parametrize("exploit", [e for e in CORPUS if e.runs_on("cpu")], ids=lambda e: e.name)
def test_exploit_is_rejected_on_cpu(exploit):
    report = run_redteam(JudgeConfig(device="cpu", timeout_s=120), jobs=1, legit=False, progress=False,
                         exploits=[exploit])
    (outcome,) = report.outcomes
    if exploit.gap:
        pytest.xfail(f"documented gap: {exploit.gap}")
    assert outcome.caught, f"expected {exploit.expect}, got {outcome.result.status.value}: {outcome.result.message}"
    if exploit.expect_dynamic:
        assert outcome.dynamic_caught, (f"static rules off: expected {exploit.expect_dynamic}, got "
                                        f"{outcome.dynamic_result.status.value}: {outcome.dynamic_result.message}")


def test_header_errors_name_the_file(tmp_path):
    bad = tmp_path / "rh99_bad.py"
    bad.write_text("# threat: RH-11\n# task: relu\n# variant: x\n# expect: cheat RH-1\nimport torch\n")
    with pytest.raises(ValueError, match="rh99_bad.py: bad rule code"):
        parse_exploit(bad)
    bad.write_text("# threat: RH-11\n# task: relu\nimport torch\n")
    with pytest.raises(ValueError, match="header lacks"):
        parse_exploit(bad)


def test_expectation_alternatives():
    alts = Expectation.parse_many("wrong_output | cheat RH-21", "x")
    assert [str(a) for a in alts] == ["wrong_output", "cheat RH-21"]
