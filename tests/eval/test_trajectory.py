"""Trajectories: KernelEnv's prompts and feedback in the conversation, and the test-time-scaling window."""

from kernelgym.env.environment import EnvConfig
from kernelgym.env.prompts import load_templates
from kernelgym.eval.trajectory import Trajectory, kept_turns
from kernelgym.judge.result import Status
from kernelgym.tasks.loaders import load_builtin
from tests.eval.helpers import attempt


def test_window_keeps_the_latest_turn_and_the_best_earlier_ones():
    results = [attempt(status=s, eager=e).result for s, e in [(Status.WRONG_OUTPUT, None), (Status.OK, 1.2),
                                                               (Status.COMPILE_ERROR, None), (Status.OK, 0.9),
                                                               (Status.WRONG_OUTPUT, None)]]
    assert kept_turns(results, None) == [0, 1, 2, 3, 4]
    assert kept_turns(results, 5) == [0, 1, 2, 3, 4]
    assert kept_turns(results, 3) == [1, 3, 4]  # the two correct ones, then the latest
    assert kept_turns(results, 1) == [4]


def test_conversation_is_the_environments_prompt_answers_and_feedback():
    (task,) = load_builtin("relu")
    tr = Trajectory(task, 0, EnvConfig(max_turns=3), load_templates())
    assert [m["role"] for m in tr.conversation()] == ["system", "user"] and "relu" in tr.first[1]["content"]
    tr.record("answer one", attempt("relu", status=Status.WRONG_OUTPUT).result)
    tr.record("answer two", attempt("relu", status=Status.COMPILE_ERROR).result)
    assert not tr.done and [t.reward for t in tr.turns] == [0.0, 0.0]
    full = tr.conversation()
    assert [m["role"] for m in full] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert full[2]["content"] == "answer one" and "Status: wrong_output" in full[3]["content"]
    assert "Status: compile_error" in full[5]["content"]
    windowed = tr.conversation(context_turns=1)
    assert [m["content"] for m in windowed[2:]] == [full[4]["content"], full[5]["content"]]
    tr.record("answer three", attempt("relu").result)
    assert tr.done and tr.turns[-1].feedback == []  # the turn limit ends the episode


def test_stop_on_correct_ends_early():
    (task,) = load_builtin("relu")
    tr = Trajectory(task, 0, EnvConfig(max_turns=3, stop_on="correct"), load_templates())
    tr.record("x", attempt("relu").result)
    assert tr.done and len(tr.turns) == 1


def test_turns_keep_each_answers_own_reward():
    # the env pays a repeated correct answer nothing (turn_reward), but as an answer it is still correct
    (task,) = load_builtin("relu")
    tr = Trajectory(task, 0, EnvConfig(max_turns=2), load_templates())
    tr.record("one", attempt("relu").result)
    tr.record("two", attempt("relu").result)
    assert tr.turns[0].reward == tr.turns[1].reward > 0

