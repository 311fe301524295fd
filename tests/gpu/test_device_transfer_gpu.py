"""The replay's outputs through CUDA IPC (`device_transfer`): used on a GPU, and the verdict is the
area path's. Run with `python -m pytest -m gpu tests/gpu/test_device_transfer_gpu.py`."""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.tasks import load_builtin
from tests.answers import relu_answer

pytestmark = pytest.mark.gpu


def _config(device_transfer: bool) -> JudgeConfig:
    return JudgeConfig(device="cuda", timeout_s=180, time_compile_baseline=False, seed=1234,
                       device_transfer=device_transfer)


@pytest.mark.parametrize("task", ["relu", "softmax"])
def test_a_builtin_answer_is_judged_through_the_device_path_as_through_the_area(task):
    item = load_builtin(task)[0]
    if task == "relu":
        answer = relu_answer()
    else:
        from pathlib import Path

        answer = (Path(__file__).parents[2] / "data" / "answers" / f"{task}.py").read_text()
    device = judge(item, answer, _config(True))
    area = judge(item, answer, _config(False))
    assert device.transfer == "device", (device.transfer, device.transfer_note)
    assert device.transfer_note == ""
    assert area.transfer == "area" and area.transfer_note == ""
    assert device.status is Status.OK and area.status is Status.OK, (device.message, area.message)
    # Same seed, same inputs, same kernels: bit-identical outputs, so identical errors trial by trial.
    assert [(t.passed, t.max_abs_error, t.max_rel_error) for t in device.trials] == \
        [(t.passed, t.max_abs_error, t.max_rel_error) for t in area.trials]
    assert device.runtime is not None and device.profile is not None
    print(task, "device phases", device.phase_seconds)
    print(task, "area phases", area.phase_seconds)


def test_a_rewritten_device_hold_is_a_wrong_output(monkeypatch):
    """On a GPU the kept timed outputs are held on the device with fingerprints, and a change the check
    reports ends as a wrong output (the change itself is a stand-in here; the honest runs above show the
    fingerprints of unchanged holds match)."""
    from kernelgym.judge import replay_judge

    monkeypatch.setattr(replay_judge, "changed_holds", lambda outputs, key: ["timed call 7"]
                        if outputs.get("fingerprints") else [])
    r = judge(load_builtin("relu")[0], relu_answer(), _config(True))
    assert r.transfer == "device" and r.status is Status.WRONG_OUTPUT, r.message
    assert "changed after the call" in r.message
