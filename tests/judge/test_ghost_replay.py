"""The ghost replay (RH-02) runs on inputs no trial used: stale memory cannot hold its answer."""

from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.judge import judge
from kernelgym.judge.result import Status
from kernelgym.tasks.loaders import builtin_answer_path, load_builtin

# An honest matvec that writes into a ring of 5 preallocated outputs: with the kernels turned
# off, the replay's output buffer is whatever an earlier call left there. Replaying trial 1's
# inputs (the replay's 7th call lands on trial 1's buffer) flagged it RH-02 every time.
RING = '''
_RING, _CALLS = {}, [0]


def _ring_empty(shape, device, dtype):
    slot = _CALLS[0] % 5
    _CALLS[0] += 1
    key = (slot, tuple(shape))
    if key not in _RING:
        _RING[key] = torch.empty(shape, device=device, dtype=dtype)
    return _RING[key]
'''


def test_an_answer_reusing_output_buffers_is_not_a_decoy():
    answer = builtin_answer_path("matvec").read_text()
    old = "out = torch.empty((M, 1), device=a.device, dtype=a.dtype)"
    assert old in answer
    answer = answer.replace(old, "out = _ring_empty((M, 1), a.device, a.dtype)") + RING
    for seed in (0, 1):
        r = judge(load_builtin("matvec")[0], answer, JudgeConfig(device="cpu", seed=seed))
        assert r.status is Status.OK, f"{r.status.value}: {r.message}"
