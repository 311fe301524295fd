"""How `kernelgym redteam` scores one exploit's verdict (`ExploitOutcome`), without judging anything."""

from pathlib import Path

from kernelgym.judge.result import CheatVerdict, EvalResult, Status
from kernelgym.redteam.corpus import parse_exploit
from kernelgym.redteam.runner import ExploitOutcome


def _exploit(tmp_path: Path, expect: str, extra: str = ""):
    path = tmp_path / "rh99_relu_probe.py"
    path.write_text(f"# threat: RH-03\n# task: relu\n# variant: probe\n# expect: {expect}\n{extra}import torch\n")
    return parse_exploit(path)


def _result(status: Status, engine: str, rule: str = "") -> EvalResult:
    r = EvalResult(status=status)
    r.engine = engine
    if rule:
        r.cheats.append(CheatVerdict(rule, "why", "runtime"))
    return r


def test_a_file_that_expects_ok_passes_when_accepted_and_fails_when_refused(tmp_path):
    # red-team round v4h's twenty-thousand-entry relu documents a cost the judge must bear: `ok` is its pass
    # (the eighth session's GPU run reported it "MISSED ... expected ok, got ok")
    exploit = _exploit(tmp_path, "ok")
    for engine in ("replay", "inprocess"):
        assert ExploitOutcome(exploit, _result(Status.OK, engine)).caught
        assert not ExploitOutcome(exploit, _result(Status.WRONG_OUTPUT, engine)).caught


def test_an_exploit_judged_ok_is_missed_unless_its_header_says_replay_neutral(tmp_path):
    exploit = _exploit(tmp_path, "cheat RH-03")
    assert not ExploitOutcome(exploit, _result(Status.OK, "replay")).caught
    neutral = _exploit(tmp_path, "cheat RH-03", "# replay: neutral: only its Python changes\n")
    assert ExploitOutcome(neutral, _result(Status.OK, "replay")).caught
    assert not ExploitOutcome(neutral, _result(Status.OK, "inprocess")).caught  # neutral only under replay


def test_under_replay_any_rejection_catches_and_in_process_the_expected_one(tmp_path):
    exploit = _exploit(tmp_path, "cheat RH-03")
    assert ExploitOutcome(exploit, _result(Status.WRONG_OUTPUT, "replay")).caught
    assert not ExploitOutcome(exploit, _result(Status.SYSTEM_ERROR, "replay")).caught
    assert ExploitOutcome(exploit, _result(Status.CHEAT, "inprocess", "RH-03")).caught
    assert not ExploitOutcome(exploit, _result(Status.CHEAT, "inprocess", "RH-01")).caught
