"""Concurrent judging in threads must give the same verdicts as judging one at a time."""

from kernelgym.judge import JudgeConfig, Status
from kernelgym.judge.batch import judge_many
from kernelgym.tasks import builtin_answer_path, load_builtin


def test_threads_do_not_mix_seeds_inputs_or_weights():
    # tasks with weights (seeded init) and random inputs, judged 4 at a time, twice each
    ids = ["linear_bias_relu", "conv1d", "rms_norm", "softmax", "batch_norm_inference", "relu"]
    pairs = [(load_builtin(t)[0], builtin_answer_path(t).read_text()) for t in ids for _ in range(2)]
    seen = []
    results = judge_many(pairs, JudgeConfig(device="cpu", timeout_s=240), jobs=4, progress=False,
                         on_result=seen.append)
    assert [r.task_id for r in results] == [t for t in ids for _ in range(2)]
    assert all(r.status is Status.OK for r in results), [(r.task_id, r.message) for r in results if not r.ok]
    assert len(seen) == len(pairs)
