"""One answer cannot hurt another on a shared GPU (issue 26): answers that hold most of the GPU's memory,
ask for more than it has on every call, flood their output or keep the GPU busy forever are judged in one
batch beside honest answers. Each gets a verdict of its own; every honest answer is still `ok`.
Run with `python -m pytest -m gpu`."""

import pytest

from kernelgym.judge import JudgeConfig, Status
from kernelgym.judge.batch import judge_many
from kernelgym.tasks import load_builtin
from kernelgym.tasks.loaders import builtin_answer_path
from tests.answers import relu_answer

pytestmark = pytest.mark.gpu

# Held from __init__ to the end of the evaluation: most of an H100's 80 GB (half of an H200's).
HOLDS_MEMORY = relu_answer(init="self.ballast = torch.empty(68 * 2**30, dtype=torch.uint8, device='cuda')")
# Every call asks for more than any GPU has.
ASKS_TOO_MUCH = relu_answer("big = torch.empty(2**40, dtype=torch.uint8, device=x.device)")
FLOODS_OUTPUT = relu_answer("for _ in range(400):\n    print('x' * 2**20)")
SPIN = """
@triton.jit
def spin_kernel(p):
    v = tl.load(p, volatile=True)
    while v == v:  # never false for the task's inputs (no NaN); a volatile load the compiler keeps
        v = tl.load(p, volatile=True)
"""
HOLDS_GPU = relu_answer("spin_kernel[(132,)](x)", extra=SPIN)


def test_bad_neighbours_get_their_own_verdicts_and_honest_answers_stay_ok():
    relu, softmax = load_builtin("relu")[0], load_builtin("softmax")[0]
    honest = [(relu, builtin_answer_path("relu").read_text()), (softmax, builtin_answer_path("softmax").read_text())]
    bad = [(relu, HOLDS_MEMORY), (relu, ASKS_TOO_MUCH), (relu, FLOODS_OUTPUT), (relu, HOLDS_GPU)]
    pairs = honest * 2 + bad + honest
    config = JudgeConfig(device="cuda", timeout_s=45, time_compile_baseline=False, static_checks=False)
    results = judge_many(pairs, config, jobs=6, progress=False)
    assert len(results) == len(pairs)
    for i in [0, 1, 2, 3, 8, 9]:  # the honest ones
        assert results[i].status is Status.OK, (results[i].task_id, results[i].status, results[i].message)
    holds_memory, asks_too_much, floods, holds_gpu = results[4:8]
    assert asks_too_much.status is Status.OOM, (asks_too_much.status, asks_too_much.message)
    assert holds_gpu.status is Status.TIMEOUT, (holds_gpu.status, holds_gpu.message)
    # Memory held but never used by a launch does not change what the replay computes; printing neither.
    assert holds_memory.status in (Status.OK, Status.OOM), (holds_memory.status, holds_memory.message)
    assert floods.status is Status.OK or floods.fault == "output_flood", (floods.status, floods.fault)
