import math
import re

import pytest

from rewards import RewardConfig


def test_defaults_are_dr_kernel():
    cfg = RewardConfig()
    assert (cfg.name, cfg.speedup_cap, cfg.baseline, cfg.prs_tau, cfg.prs_f) == ("drkernel", 3.0, "eager", 0.3, 0.1)


def test_every_field_has_help():
    from dataclasses import fields

    assert all(f.metadata.get("help") for f in fields(RewardConfig))


@pytest.mark.parametrize(
    "kwargs, field_name",
    [
        ({"name": "fast"}, "RewardConfig.name must be one of cheat_penalty, drkernel, shaped"),
        ({"baseline": "cudnn"}, "RewardConfig.baseline"),
        ({"speedup_cap": 0.0}, "RewardConfig.speedup_cap"),
        ({"speedup_cap": math.inf}, "RewardConfig.speedup_cap"),
        ({"speedup_cap": math.nan}, "RewardConfig.speedup_cap"),
        ({"cheat_penalty": 0.0}, "RewardConfig.cheat_penalty"),
        ({"stage_penalty_runtime": -0.1}, "stage_penalty_compile < stage_penalty_runtime"),
        ({"stage_penalty_wrong_output": 0.0}, "stage_penalty_wrong_output < 0"),
        ({"name": "shaped", "cheat_penalty": -0.5}, "RewardConfig.cheat_penalty must be <= stage_penalty_compile"),
        ({"prs_tau": 1.0}, "RewardConfig.prs_tau"),
        ({"prs_tau": -0.1}, "RewardConfig.prs_tau"),
        ({"prs_f": 0.0}, "RewardConfig.prs_f"),
        ({"outlier_threshold": 0.0}, "RewardConfig.outlier_threshold"),
        ({"format_weight": -1.0}, "RewardConfig.format_weight"),
    ],
)
def test_invalid_config_names_the_field(kwargs, field_name):
    with pytest.raises(ValueError, match=re.escape(field_name)):
        RewardConfig(**kwargs)


def test_cheat_penalty_above_compile_penalty_allowed_outside_shaped():
    assert RewardConfig(name="cheat_penalty", cheat_penalty=-0.5).cheat_penalty == -0.5


def test_outlier_threshold_inf_disables():
    assert RewardConfig(outlier_threshold=math.inf).outlier_threshold == math.inf


def test_floor_is_the_least_reward_an_answer_can_earn():
    assert RewardConfig(name="drkernel").floor == 0.0
    assert RewardConfig(name="cheat_penalty", cheat_penalty=-2.0).floor == -2.0
    assert RewardConfig(name="shaped").floor == RewardConfig(name="shaped").cheat_penalty
