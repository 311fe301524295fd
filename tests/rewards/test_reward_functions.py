import math

import pytest

from kernelgym.judge.result import Status
from rewards import (
    REWARDS,
    RewardConfig,
    cheat_penalty_reward,
    drkernel_reward,
    format_reward,
    get_reward,
    shaped_reward,
    total_reward,
)

DEFAULT = RewardConfig()


def test_drkernel_pass(result):
    assert drkernel_reward(result(speedup=2.0, share=0.8), DEFAULT) == pytest.approx(0.5 + 1.0 + 0.4)  # 1.9


def test_drkernel_speedup_capped(result):
    assert drkernel_reward(result(speedup=5.0, share=0.6), DEFAULT) == pytest.approx(0.5 + 1.5 + 0.3)  # 2.3


def test_drkernel_slowdown_still_earns_its_speedup_term(result):
    assert drkernel_reward(result(speedup=0.5, share=1.0), DEFAULT) == pytest.approx(0.5 + 0.25 + 0.5)


def test_drkernel_cpu_run_keeps_correctness_only(result):
    # CPU: timing and profile "not measured" -> both terms 0, the 0.5 for correctness stays
    assert drkernel_reward(result(speedup=None, share=None), DEFAULT) == 0.5


@pytest.mark.parametrize(
    "status", [s for s in Status if s is not Status.OK]
)
def test_drkernel_zero_on_any_failure(result, status):
    assert drkernel_reward(result(status=status), DEFAULT) == 0.0


def test_drkernel_zero_on_cheat_verdict_even_if_status_ok(result):
    assert drkernel_reward(result(cheat=True), DEFAULT) == 0.0
    assert drkernel_reward(result(status=Status.CHEAT, cheat=True), DEFAULT) == 0.0


def test_drkernel_compile_baseline(result):
    cfg = RewardConfig(baseline="compile")
    assert drkernel_reward(result(speedup=2.0, compile_speedup=1.2, share=0.5), cfg) == pytest.approx(0.5 + 0.6 + 0.25)
    # compile baseline not timed -> speedup term 0
    assert drkernel_reward(result(speedup=2.0, compile_speedup=None, share=0.5), cfg) == pytest.approx(0.75)


def test_drkernel_custom_cap(result):
    assert drkernel_reward(result(speedup=5.0, share=0.0), RewardConfig(speedup_cap=4.0)) == pytest.approx(2.5)


SHAPED = RewardConfig(name="shaped")


def test_shaped_stages_are_ordered(result):
    r = {s: shaped_reward(result(status=s), SHAPED) for s in Status}
    assert r[Status.CHEAT] == -1.0
    assert r[Status.INVALID_ANSWER] == r[Status.COMPILE_ERROR] == -0.6
    assert r[Status.RUNTIME_ERROR] == r[Status.TIMEOUT] == r[Status.CRASHED] == r[Status.OOM] == -0.4
    assert r[Status.WRONG_OUTPUT] == -0.2
    assert r[Status.CHEAT] < r[Status.COMPILE_ERROR] < r[Status.RUNTIME_ERROR] < r[Status.WRONG_OUTPUT] < r[Status.OK]
    assert r[Status.SYSTEM_ERROR] == 0.0  # the service's failure is neither rewarded nor punished


def test_system_error_earns_nothing_from_every_reward(result):
    failed = result(status=Status.SYSTEM_ERROR)
    for name in ("drkernel", "shaped", "cheat_penalty"):
        assert get_reward(name)(failed, RewardConfig(name=name)) == 0.0


def test_shaped_pass_is_log_speedup(result):
    assert shaped_reward(result(speedup=1.0), SHAPED) == pytest.approx(1.0)
    assert shaped_reward(result(speedup=2.0), SHAPED) == pytest.approx(1.0 + math.log(2.0))  # 1.6931
    assert shaped_reward(result(speedup=5.0), SHAPED) == pytest.approx(1.0 + math.log(3.0))  # capped: 2.0986
    assert shaped_reward(result(speedup=0.2), SHAPED) == 0.0  # 1 + ln 0.2 < 0, floored so a pass beats any failure
    assert shaped_reward(result(speedup=None, share=None), SHAPED) == 1.0  # not measured


def test_shaped_cheat_verdict_with_ok_status(result):
    assert shaped_reward(result(cheat=True), SHAPED) == -1.0


def test_cheat_penalty_reward(result):
    cfg = RewardConfig(name="cheat_penalty", cheat_penalty=-1.0)
    assert cheat_penalty_reward(result(status=Status.CHEAT, cheat=True), cfg) == -1.0
    assert cheat_penalty_reward(result(cheat=True), cfg) == -1.0
    assert cheat_penalty_reward(result(status=Status.WRONG_OUTPUT), cfg) == 0.0
    assert cheat_penalty_reward(result(speedup=2.0, share=0.8), cfg) == pytest.approx(1.9)


def test_registry_and_get_reward():
    assert REWARDS == {"drkernel": drkernel_reward, "shaped": shaped_reward, "cheat_penalty": cheat_penalty_reward}
    assert get_reward("shaped") is shaped_reward


def test_get_reward_unknown_lists_known_names():
    with pytest.raises(ValueError, match="unknown reward 'speed'.*cheat_penalty, drkernel, shaped"):
        get_reward("speed")


GOOD = """Here is my kernel.
```python
import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)

class ModelNew(torch.nn.Module):
    def forward(self, x, y):
        return x
```
"""


def test_format_reward_good():
    assert format_reward(GOOD) == 1.0


@pytest.mark.parametrize(
    "text",
    [
        GOOD.replace("```python\n", "").replace("```\n", ""),  # no fenced block
        GOOD.replace("class ModelNew", "class Model"),
        GOOD.replace("@triton.jit\n", ""),
        GOOD.replace("    pid = tl.program_id(0)", "    pid = (("),  # syntax error
        "",
        "```python\n```",
        GOOD[:GOOD.rindex("```")],  # the block is never closed (an answer cut by its token limit)
        "```text\nnotes\n```\n" + GOOD.replace("```python\n", "").replace("```\n", ""),  # bare code after a block
    ],
    ids=["no-fence", "no-modelnew", "no-jit", "syntax-error", "empty", "empty-block", "unclosed", "bare-after-block"],
)
def test_format_reward_bad(text):
    assert format_reward(text) == 0.0


def test_total_reward_adds_weighted_format(result):
    r = result(speedup=2.0, share=0.8)
    assert total_reward(r, DEFAULT, GOOD) == pytest.approx(1.9)  # weight 0: format ignored
    cfg = RewardConfig(format_weight=0.1)
    assert total_reward(r, cfg, GOOD) == pytest.approx(2.0)
    assert total_reward(r, cfg, "no code") == pytest.approx(1.9)
    assert total_reward(result(status=Status.CHEAT, cheat=True), RewardConfig(name="shaped"), "") == -1.0
