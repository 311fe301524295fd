"""Episodes with the real judge on CPU: turn limits, early stop, rewards, feedback, bad calls."""

import pytest

from kernelgym.env import EnvConfig, EnvError, KernelEnv
from kernelgym.judge import JudgeConfig
from kernelgym.tasks import builtin_answer_path
from rewards import RewardConfig
from tests.answers import relu_answer

CPU = JudgeConfig(device="cpu", timeout_s=120)
WRONG = relu_answer(forward_body="return x * 2.0")  # launches nothing: RH-02 / wrong
GOOD = builtin_answer_path("relu").read_text()


def test_episode_wrong_then_fixed_runs_all_turns_and_keeps_returns():
    env = KernelEnv(judge_config=CPU, env_config=EnvConfig(max_turns=2))
    first = env.reset("relu")
    assert [m["role"] for m in first.messages] == ["system", "user"] and "class Model" in first.messages[1]["content"]
    assert first.reward is None and not first.done

    obs = env.step(f"```python\n{WRONG}\n```")
    assert not obs.done and obs.reward == 0.0 and obs.metadata["turn"] == 1
    assert obs.metadata["result"]["status"] != "ok"
    assert obs.messages and obs.messages[0]["role"] == "user"
    assert obs.metadata["feedback"] in obs.messages[0]["content"]

    obs = env.step(GOOD)
    assert obs.done and obs.metadata["result"]["status"] == "ok"
    assert obs.reward == pytest.approx(0.5)  # CPU: correct, speed and share not measured
    assert obs.metadata["returns_to_go"] == [pytest.approx(0.5), pytest.approx(0.5)]
    assert env.state.rewards == [0.0, pytest.approx(0.5)]
    with pytest.raises(EnvError, match="is over"):
        env.step(GOOD)


def test_stop_on_correct_ends_the_episode_early():
    env = KernelEnv(judge_config=CPU, env_config=EnvConfig(max_turns=3, stop_on="correct"))
    env.reset("relu")
    obs = env.step(GOOD)
    assert obs.done and env.state.turn == 1 and obs.messages == []


def test_bad_calls_are_clear_errors():
    env = KernelEnv(judge_config=CPU)
    with pytest.raises(EnvError, match="before reset"):
        env.step(GOOD)
    with pytest.raises(ValueError, match="unknown built-in task"):
        env.reset("no_such_task")
    with pytest.raises(ValueError, match="stop_on"):
        EnvConfig(stop_on="sometimes")
    with pytest.raises(ValueError, match="RewardConfig.name must be one of"):
        KernelEnv(judge_config=CPU, reward_config=RewardConfig(name="nope"))


def test_speedup_stop_uses_the_configured_baseline():
    from kernelgym.judge.result import EvalResult, Profile, Status

    fast = EvalResult(status=Status.OK, task_id="relu", compiled=True, correct=True, speedup_eager=1.5,
                      profile=Profile(kernels=[], total_device_us=1.0, triton_share=1.0))
    env = KernelEnv(judge_config=CPU, env_config=EnvConfig(stop_on="speedup", target_speedup=1.2),
                    judge_fn=lambda task, answer, config: fast)
    env.reset("relu")
    obs = env.step("anything")
    assert obs.done and obs.reward == pytest.approx(0.5 + 0.75 + 0.5)


def _fixed_judge(*results):
    from kernelgym.judge.result import EvalResult, Status

    made = [EvalResult(status=s, task_id="relu", compiled=s is Status.OK, correct=s is Status.OK) for s in results]
    return lambda task, answer, config: made.pop(0)


def test_repeating_a_correct_answer_earns_no_more_than_submitting_it_once():
    from kernelgym.judge.result import Status

    once = KernelEnv(judge_config=CPU, env_config=EnvConfig(max_turns=1), judge_fn=_fixed_judge(Status.OK))
    once.reset("relu")
    once.step(GOOD)
    env = KernelEnv(judge_config=CPU, env_config=EnvConfig(max_turns=3),  # the default turn_reward
                    judge_fn=_fixed_judge(Status.OK, Status.OK, Status.OK))
    env.reset("relu")
    steps = [env.step(GOOD) for _ in range(3)]
    assert [s.reward for s in steps] == [pytest.approx(0.5), 0.0, 0.0]
    assert env.state.returns_to_go()[0] == pytest.approx(once.state.returns_to_go()[0]) == pytest.approx(0.5)
    assert [s.metadata["answer_reward"] for s in steps] == [pytest.approx(0.5)] * 3 == env.state.answer_rewards


def test_improvement_pays_the_gain_and_penalties_always_count():
    from kernelgym.env.environment import turn_reward

    assert turn_reward(1.2, [0.5], "improvement") == pytest.approx(0.7)  # return = best answer's reward
    assert turn_reward(0.3, [0.5], "improvement") == 0.0  # a worse answer after a better one
    assert turn_reward(-1.0, [0.5], "improvement") == -1.0  # a cheat costs whenever it happens
    assert turn_reward(0.5, [-1.0], "improvement") == pytest.approx(0.5)  # penalties are no baseline
    # a resubmission's new timing within the margin is noise, not an improvement
    assert turn_reward(1.015, [1.0], "improvement", margin=0.02) == 0.0
    assert turn_reward(1.05, [1.0], "improvement", margin=0.02) == pytest.approx(0.05)
    assert turn_reward(0.01, [0.0, -1.0], "improvement", margin=0.02) == pytest.approx(0.01)  # no earlier pass
    assert turn_reward(1.015, [1.0], "absolute", margin=0.02) == 1.015
    # gains are measured from the level paid, so small real gains add up, and neither regressing nor
    # resubmitting beats improving (red team: against the best answer they did, under TRLOO)
    climb = [1.0, 1.015, 1.03, 1.045, 1.06]
    paid = [turn_reward(r, climb[:i], "improvement", margin=0.02) for i, r in enumerate(climb)]
    assert sum(paid) == pytest.approx(1.06) and paid[1] == 0.0 and paid[2] == pytest.approx(0.03)
    for path in ([1.0, 1.015, 1.04], [1.0, 0.9, 1.04], [1.0, 1.0, 1.04]):
        assert sum(turn_reward(r, path[:i], "improvement", margin=0.02) for i, r in enumerate(path)) == \
            pytest.approx(1.04)


def test_absolute_turn_reward_is_dr_kernels():
    from kernelgym.judge.result import Status

    env = KernelEnv(judge_config=CPU, env_config=EnvConfig(max_turns=2, turn_reward="absolute"),
                    judge_fn=_fixed_judge(Status.OK, Status.OK))
    env.reset("relu")
    assert [env.step(GOOD).reward for _ in range(2)] == [pytest.approx(0.5), pytest.approx(0.5)]
    with pytest.raises(ValueError, match="turn_reward"):
        EnvConfig(turn_reward="sum")
