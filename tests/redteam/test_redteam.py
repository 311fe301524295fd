"""The red-team corpus on CPU: every exploit that can run here is rejected with its expected
verdict, with all checks on and, where declared, with the static rules off (defence in depth).
Task-agnostic exploits (`task: *`) run on a small sample of tasks (`CI_AGNOSTIC_TASKS`; the CLI runs
them on every task). Every honest-but-unusual answer in `honest/` must be judged `ok`."""

import pytest

from kernelgym.judge import JudgeConfig, judge
from kernelgym.judge.result import Status
from kernelgym.redteam.corpus import (
    ANY_TASK,
    CI_AGNOSTIC_TASKS,
    Expectation,
    expand_agnostic,
    load_corpus,
    load_honest,
    parse_exploit,
    parse_honest,
)
from kernelgym.redteam.runner import run_redteam
from kernelgym.tasks import builtin_task_ids, load_builtin

RAW_CORPUS = load_corpus()
CORPUS = expand_agnostic(RAW_CORPUS, CI_AGNOSTIC_TASKS)
HONEST = load_honest()


def test_corpus_covers_every_category_it_can():
    threats = {e.threat for e in CORPUS}
    # every category of THREATS.md has at least one exploit (RH-26, a detector, has forged-time ones)
    assert {f"RH-{i:02d}" for i in range(1, 28)} <= threats
    assert {e.task for e in CORPUS} <= set(builtin_task_ids())
    assert {e.task for e in RAW_CORPUS} <= set(builtin_task_ids()) | {ANY_TASK}
    assert len([e for e in RAW_CORPUS if e.agnostic]) >= 3
    assert set(CI_AGNOSTIC_TASKS) <= set(builtin_task_ids())


def test_agnostic_exploits_expand_over_tasks():
    agnostic = [e for e in RAW_CORPUS if e.agnostic]
    expanded = expand_agnostic(agnostic, ["relu", "softmax"])
    assert len(expanded) == 2 * len(agnostic)
    assert {e.name for e in expanded} == {f"{e.name}[{t}]" for e in agnostic for t in ("relu", "softmax")}
    assert not any(e.agnostic for e in expanded)
    bound = next(e for e in RAW_CORPUS if not e.agnostic)
    assert expand_agnostic([bound], ["relu"]) == [bound]
    with pytest.raises(ValueError, match="bound to task"):
        bound.for_task("relu")


def test_honest_corpus_is_well_formed():
    assert len(HONEST) >= 30
    assert {a.task for a in HONEST} <= set(builtin_task_ids())
    assert len({a.name for a in HONEST}) == len(HONEST)


# The GPU refuses these (a judge rule's known false flag, not Triton's compiler), and since the CPU runs the
# GPU front end and reads its TTIR (`kernelgym/judge/front_end.py`) the CPU does too: CPU = GPU. Strict, so
# that fixing the rule makes these fail here until they are taken off the list.
# Honest answers the judge still refuses, with the reason (strict: a fix makes the entry fail until removed).
KNOWN_FALSE_FLAGS: dict[str, str] = {
    "l2_normalize_same_kernel_name_two_classes_v4j": "kernels are found by name in the answer's text: two "
    "@triton.jit functions of one name (in two classes) are refused with a message asking for distinct names "
    "(docs/ANSWER_CONTRACT.md)",
    "relu_jit_function_constexpr_arg_v4j": "a @triton.jit function passed as a launch argument has no trace form "
    "(docs/ANSWER_CONTRACT.md): refused with a message saying to call it by name",
}
GAP_SEED = 7


@pytest.mark.parametrize("answer", [pytest.param(a, marks=pytest.mark.xfail(reason=KNOWN_FALSE_FLAGS[a.name], strict=True))
                                    if a.name in KNOWN_FALSE_FLAGS else a for a in HONEST], ids=lambda a: a.name)
def test_honest_unusual_answer_is_accepted_on_cpu(answer):
    (task,) = load_builtin(answer.task)
    result = judge(task, answer.text, JudgeConfig(device="cpu", timeout_s=120))
    assert result.status is Status.OK, (f"false flag on an honest answer ({answer.style}): "
                                        f"{result.status.value}: {result.message}")


@pytest.mark.parametrize("exploit", [e for e in CORPUS if e.runs_on("cpu")], ids=lambda e: e.name)
def test_exploit_is_rejected_on_cpu(exploit):
    # A documented gap is judged on fixed draws: some gaps are open on most secret draws and closed on a few
    # (the bf16 intermediate of round tf32 errs close to swiglu's per-task bound), which would make the
    # "gap closed" check below a coin toss. Every other exploit gets secret draws, as answers do.
    seed = GAP_SEED if exploit.gap_for("cpu") else None
    report = run_redteam(JudgeConfig(device="cpu", timeout_s=120, seed=seed), jobs=1, legit=False, progress=False,
                         exploits=[exploit])
    (outcome,) = report.outcomes
    if exploit.gap_for("cpu"):
        # A gap that closed is reported, so the header does not outlive the hole it documents.
        assert not (outcome.caught and (not exploit.expect_dynamic or outcome.dynamic_caught)), (
            f"the documented gap is closed ({outcome.result.status.value}): remove the `# gap:` header")
        pytest.xfail(f"documented gap: {exploit.gap_for('cpu')}")
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


def test_honest_header_errors_name_the_file(tmp_path):
    bad = tmp_path / "odd.py"
    bad.write_text("# task: relu\nimport torch\n")
    with pytest.raises(ValueError, match="odd.py: header lacks"):
        parse_honest(bad)
    bad.write_text("# task: *\n# style: x\nimport torch\n")
    with pytest.raises(ValueError, match="one task"):
        parse_honest(bad)
    bad.write_text("# task: relu\n# style: plain\nimport torch\n")
    assert parse_honest(bad).style == "plain"


def test_expectation_alternatives():
    alts = Expectation.parse_many("wrong_output | cheat RH-21", "x")
    assert [str(a) for a in alts] == ["wrong_output", "cheat RH-21"]


def test_a_shard_judges_its_share_and_names_each_result():
    pool = [e for e in CORPUS if e.name in ("rh01_add_mul_plain_operators", "rh01_argmax_argsort_token",
                                            "rh01_attention_nansum_softmin")]
    assert len(pool) == 3
    seen: list[str] = []
    report = run_redteam(JudgeConfig(device="cpu", timeout_s=120), jobs=1, legit=False, progress=False,
                         exploits=pool, shard=(1, 2), on_result=lambda name, r: seen.append(name))
    assert [o.exploit.name for o in report.outcomes] == ["rh01_argmax_argsort_token"]
    assert seen == ["exploit:rh01_argmax_argsort_token"]


def test_a_gap_can_be_open_on_one_device_only(tmp_path):
    path = tmp_path / "rh03_relu_gap_on.py"
    path.write_text("# threat: RH-03\n# task: relu\n# variant: x\n# expect: cheat RH-03\n# gap_on: cpu\n"
                    "# gap: the CPU has no profile\nimport torch\n")
    exploit = parse_exploit(path)
    assert exploit.gap_for("cpu") == "the CPU has no profile" and exploit.gap_for("cuda:0") == ""
    path.write_text(path.read_text().replace("gap_on: cpu", "gap_on: tpu"))
    with pytest.raises(ValueError, match="gap_on must be"):
        parse_exploit(path)
