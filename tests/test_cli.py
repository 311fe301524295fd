import json
import subprocess
import sys

from kernelgym.tasks import builtin_answer_path


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
    assert json.loads(out.read_text().splitlines()[0])["status"] == "ok"
