import json
import subprocess
import sys

from kernelgym.tasks import builtin_answer_path, data_dir
from tests.tasks import kernelbench_style as kb


def run_cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "kernelgym.cli", *args], capture_output=True, text=True,
                          input=stdin, timeout=300)


def test_judge_json_output():
    p = run_cli("judge", "relu", str(builtin_answer_path("relu")), "--device", "cpu", "--json")
    assert p.returncode == 0, p.stderr
    result = json.loads(p.stdout)
    assert result["status"] == "ok" and result["version"] == 1 and result["task_id"] == "relu"


def test_judge_reads_stdin_and_reports_failure_with_exit_1():
    p = run_cli("judge", "relu", "-", "--device", "cpu", stdin="x = 1\n")
    assert p.returncode == 1
    assert "invalid_answer" in p.stdout


def test_user_mistakes_are_one_line_errors_not_tracebacks():
    for args in (("judge", "no_such_task", "x.py"), ("judge", "relu", "/no/such/answer.py"),
                 ("tasks", "list", "kernelbench:/no/such/dir")):
        p = run_cli(*args)
        assert p.returncode == 2
        assert p.stderr.startswith("error:") and "Traceback" not in p.stderr


def test_run_judges_builtin_answers_and_prints_a_table(tmp_path):
    out = tmp_path / "results.jsonl"
    p = run_cli("run", "--device", "cpu", "--tasks", "relu", "--json-out", str(out))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1/1 ok" in p.stdout and "relu" in p.stdout
    # the preflight is announced before it starts and reported task by task (no terminal: a line each)
    assert 0 <= p.stdout.index("preflight of 1 task(s) on cpu") < p.stdout.index("  relu: ok (") < p.stdout.index("1/1 ok")
    assert "the --trials secret trials plus the cache probe and a hidden variant" in p.stdout  # why 7/7 for 5
    assert json.loads(out.read_text().splitlines()[0])["status"] == "ok"


def _not_judged_rows(stdout: str) -> dict[str, str]:
    """task -> label of the "Tasks not judged (preflight)" table."""
    return {line.split("│")[1].strip(): line.split("│")[2].strip() for line in stdout.splitlines()
            if line.count("│") >= 4 and line.split("│")[1].strip() in ("gelu", "leaky_relu")}


def test_run_judges_the_tasks_within_limits_and_lists_the_others_as_rows(tmp_path):
    # Ids with a built-in answer: relu's own task, and a task whose reference takes 64 GB. The time limit
    # is a ceiling far above what either needs, so a loaded machine cannot turn the oom into a timeout.
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "relu.py").write_text((data_dir() / "tasks" / "relu.py").read_text())
    (tasks / "leaky_relu.py").write_text(kb.HIDDEN_ALLOCATION)
    out = tmp_path / "results.jsonl"
    p = run_cli("run", "--device", "cpu", "--tasks", str(tasks), "--trials", "1", "--jobs", "2", "--memory-gb", "4",
                "--task-timeout", "250", "--json-out", str(out))
    assert p.returncode == 1, p.stdout + p.stderr  # every answer judged is ok, but one task was not judged
    assert "1/1 ok; 1 task(s) not judged (preflight)" in p.stdout
    assert _not_judged_rows(p.stdout) == {"leaky_relu": "over limits: oom"}
    assert [json.loads(line)["task_id"] for line in out.read_text().splitlines()] == ["relu"]


def test_run_lists_a_task_whose_reference_never_returns_as_a_timeout(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    (tasks / "gelu.py").write_text(kb.HANGS)  # a timeout at any limit: no bet on the machine's speed
    p = run_cli("run", "--device", "cpu", "--tasks", str(tasks), "--task-timeout", "5")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "0/0 ok; 1 task(s) not judged (preflight)" in p.stdout
    assert _not_judged_rows(p.stdout) == {"gelu": "over limits: timeout"}


DEGENERATE_TASK = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x * 0

def get_inputs():
    return [torch.randn(16, 16)]

def get_init_inputs():
    return []
'''


def test_tasks_audit_flags_a_degenerate_task_and_exits_1(tmp_path):
    (tmp_path / "tiny.py").write_text(DEGENERATE_TASK)
    res = run_cli("tasks", "audit", str(tmp_path), "--json-out", str(tmp_path / "audit.jsonl"))
    assert res.returncode == 1, res.stdout + res.stderr
    row = json.loads((tmp_path / "audit.jsonl").read_text())
    assert row["task_id"] == "tiny" and "zeros" in json.dumps(row)
    assert "degenerate" in res.stdout


def test_redteam_on_one_threat_prints_the_table():
    res = run_cli("redteam", "--device", "cpu", "--no-legit", "--only", "rh01_matmul_passthrough", "--jobs", "1")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "RH-01" in res.stdout and "caught without static rules" in res.stdout
    res = run_cli("redteam", "--no-legit", "--no-exploits")
    assert res.returncode == 2 and "nothing to run" in res.stderr
    res = run_cli("redteam", "--shard", "4/4")
    assert res.returncode == 2 and "--shard takes K/N" in res.stderr


def test_redteam_json_lines_name_their_file(tmp_path):
    out = tmp_path / "rt.jsonl"
    res = run_cli("redteam", "--device", "cpu", "--no-legit", "--only", "rh01_add_mul_plain_operators", "--jobs", "1",
                  "--json-out", str(out), "--shard", "0/1")
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["redteam"] for r in rows] == ["exploit:rh01_add_mul_plain_operators"]
    assert rows[0]["status"] in ("invalid_answer", "cheat")
    # the rows make the report again, judging nothing; a legitimate answer refused in them fails it
    res = run_cli("redteam", "--from-jsonl", str(out))
    assert res.returncode == 0 and "RH-01" in res.stdout, res.stdout + res.stderr
    flagged = tmp_path / "flagged.jsonl"
    flagged.write_text(json.dumps({**rows[0], "redteam": "builtin:relu", "task_id": "relu"}) + "\n")
    res = run_cli("redteam", "--from-jsonl", str(out), str(flagged))
    assert res.returncode == 1 and "FALSE FLAG builtin:relu" in res.stdout, res.stdout + res.stderr
    (tmp_path / "bad.jsonl").write_text("{not json\n")
    res = run_cli("redteam", "--from-jsonl", str(tmp_path / "bad.jsonl"))
    assert res.returncode == 2 and "bad.jsonl:1: not a JSON line" in res.stderr


def _subcommands(parser, path=("kernelgym",)):
    """(command path, parser) of every command and subcommand."""
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, path + (name,))


def test_every_option_of_every_command_says_what_it_does():
    import argparse

    from kernelgym.cli import _build_parser

    silent = [f"{' '.join(path)} {a.option_strings or a.dest}" for path, p in _subcommands(_build_parser())
              for a in p._actions
              if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)) and not a.help]
    assert silent == []


def test_help_names_every_task_spec_form_and_what_the_audit_checks():
    from kernelgym.cli import _build_parser

    helps = {" ".join(path): p.format_help() for path, p in _subcommands(_build_parser())}
    for command in ("kernelgym eval", "kernelgym tasks audit", "kernelgym tasks list", "kernelgym run"):
        text = " ".join(helps[command].split())  # argparse wraps lines
        assert all(form in text for form in ("kernelbench:", "hf:", "gen:DIR[:train|heldout")), command
    audit = " ".join(helps["kernelgym tasks audit"].split())
    assert all(control in audit for control in ("zeros", "constant", "mean", "identity", "stale", "degenerate"))
    top = " ".join(helps["kernelgym"].split())
    assert "a check of the judge on this machine (the main job, GRPO training, is train/grpo.py" in top  # as README
