"""Every shipped training config parses into the trainer's dataclasses on this CPU machine, so a
misspelled or retired field fails here, not minutes into a GPU call. GPU configs are parsed with
`--bf16 false --use_cpu true`: TrainingArguments refuses bf16 on a machine without a GPU, and
nothing else they set depends on one."""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p for p in (ROOT / "configs").glob("*.yaml"))
ON_CPU = ["--bf16", "false", "--use_cpu", "true"]


def _parse(path: Path, extra: list[str]):
    if path.name.startswith("sft_"):
        from train.sft import parse_args
    else:
        from train.config import parse_args
    return parse_args(["--config", str(path), *extra])


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_every_config_parses(path):
    ours, trainer_args, model_args = _parse(path, ON_CPU)
    assert trainer_args.learning_rate > 0 and trainer_args.output_dir
    assert model_args.model_name_or_path


def test_a_misspelled_field_is_refused(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text((ROOT / "configs" / "tiny_cpu.yaml").read_text().replace("learning_rate:", "learning_rat:"))
    with pytest.raises(ValueError, match="learning_rat"):
        _parse(bad, [])
