"""Every status the judge can give, on CPU under the Triton interpreter."""

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.tasks import Task, TaskError, load_builtin
from tests.answers import HEADER, RELU_KERNEL, relu_answer

CPU = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60)
UNCHECKED = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, static_checks=False)  # to reach the dynamic defences


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


def test_ok_answer_passes_every_trial(relu):
    r = judge(relu, relu_answer(), CPU)
    assert r.status is Status.OK, r.message
    assert r.correct and r.compiled
    # 5 trials, the cache probe (trial 0's inputs with a few values swapped) and a hidden task variant
    assert len(r.trials) == 7 and all(t.passed for t in r.trials)
    assert {t.distribution for t in r.trials} == {"task", "signed", "wide", "offset", "huge", "task+probe",
                                                  "signed+variant"}
    assert {t.grad_enabled for t in r.trials} == {True, False}
    assert r.kernels_launched == ["relu_kernel"]
    assert r.runtime is None and "not measured" in r.timing_note
    assert set(r.phase_seconds) >= {"parse", "compile", "correctness"}


def test_fenced_answer_uses_last_python_block(relu):
    text = f"Here is a draft:\n```python\nprint('draft')\n```\nFinal:\n```python\n{relu_answer()}\n```\nDone."
    assert judge(relu, text, CPU).status is Status.OK


def test_wrong_output(relu):
    answer = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)", "tl.load(x_ptr + offs, mask=m) * 1.001")
    r = judge(relu, answer, CPU)
    assert r.status is Status.WRONG_OUTPUT
    assert not r.correct and r.compiled
    assert all(not t.passed for t in r.trials)
    assert r.trials[0].max_abs_error > 0 and "outside atol" in r.trials[0].message


def test_nan_output_never_passes(relu):
    answer = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)", "tl.load(x_ptr + offs, mask=m) / 0.0 * 0.0")
    r = judge(relu, answer, CPU)
    assert r.status is Status.WRONG_OUTPUT
    assert "NaN/Inf" in r.trials[0].message


def test_wrong_dtype_is_wrong_output(relu):
    answer = relu_answer().replace("out = torch.empty_like(x)", "out = torch.empty_like(x, dtype=torch.float64)")
    r = judge(relu, answer, CPU)
    assert r.status is Status.WRONG_OUTPUT and "dtype" in r.message


def test_compile_error_at_import(relu):
    r = judge(relu, relu_answer(extra="BLOCK_DEFAULT = 1024 // (BLOCK_MIN - 8)\nBLOCK_MIN = 8"), CPU)
    assert r.status is Status.COMPILE_ERROR
    assert "NameError" in r.error and "BLOCK_MIN" in r.error
    assert "answer.py" in r.error  # the model sees its own frames, not ours


def test_runtime_error_in_forward(relu):
    r = judge(relu, relu_answer("raise RuntimeError('kernel exploded')"), CPU)
    assert r.status is Status.RUNTIME_ERROR
    assert "kernel exploded" in r.error and r.compiled


def test_triton_error_in_kernel_is_reported(relu):
    answer = relu_answer().replace("    m = offs < n", "    tl.static_assert(BLOCK < 0, 'BLOCK must be negative')\n    m = offs < n")
    r = judge(relu, answer, CPU)
    assert r.status in (Status.COMPILE_ERROR, Status.RUNTIME_ERROR)
    assert "BLOCK must be negative" in r.error


@pytest.mark.parametrize("engine", ["inprocess", "replay"])
def test_a_kernel_that_fails_to_compile_is_a_compile_error_and_not_compiled(relu, engine):
    # tl.arange needs a power-of-2 range: Triton's compiler refuses it before a GPU launch; the CPU
    # interpreter raises it while running the kernel body. Either way the answer did not compile.
    config = JudgeConfig(engine=engine, device="cpu", timeout_s=60)
    answer = relu_answer().replace("    m = offs < n", "    m = offs < n\n    spare = tl.arange(0, 3)")
    r = judge(relu, answer, config)
    assert r.status is Status.COMPILE_ERROR, r.message
    assert not r.compiled and "power of 2" in r.error
    wrong = judge(relu, relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)",
                                              "tl.load(x_ptr + offs, mask=m) * 1.001"), config)
    assert wrong.status is Status.WRONG_OUTPUT and wrong.compiled  # compiled and ran, but wrong


def test_static_cheat_names_rule(relu):
    r = judge(relu, relu_answer("return torch.relu(x)"), CPU)
    assert r.status is Status.CHEAT
    assert any(c.rule == "RH-01" for c in r.cheats)
    assert r.phase_seconds.get("compile") is None  # rejected before anything ran


def test_kernel_never_launched_is_cheat(relu):
    answer = relu_answer("if x.numel() < 0:\n    return x\nreturn torch.empty_like(x)")
    r = judge(relu, answer, UNCHECKED)
    assert r.status is Status.CHEAT
    assert any(c.rule == "RH-02" for c in r.cheats)


def test_input_mutation_and_aliasing_are_cheats(relu):
    answer = relu_answer().replace("out = torch.empty_like(x)", "out = x")
    r = judge(relu, answer, UNCHECKED)
    assert r.status is Status.CHEAT
    assert {c.rule for c in r.cheats} == {"RH-10"}
    assert any("modified its input" in c.reason for c in r.cheats)
    assert any("shares memory" in c.reason for c in r.cheats)


def test_tensor_subclass_output_is_cheat(relu):
    extra = "class Lazy(torch.Tensor):\n    pass\n"
    answer = relu_answer(extra=extra).replace("return out", "return out.as_subclass(Lazy)")
    r = judge(relu, answer, UNCHECKED)
    assert r.status is Status.CHEAT and any(c.rule == "RH-19" for c in r.cheats)


def test_timeout_kills_within_limit(relu):
    cfg = JudgeConfig(engine="inprocess", device="cpu", timeout_s=6, static_checks=False)
    r = judge(relu, relu_answer("while True:\n    pass"), cfg)
    assert r.status is Status.TIMEOUT and r.fault == "wall_clock"  # killed: the loop never ends by itself


def test_segfault_is_crash_and_fast(relu):
    r = judge(relu, relu_answer("import ctypes\nctypes.string_at(0)"), UNCHECKED)
    assert r.status is Status.CRASHED and r.fault == "signal:SIGSEGV"  # seen as the signal, not as a timeout


def test_os_exit_at_import_is_crash(relu):
    r = judge(relu, relu_answer(extra="import os\nos._exit(0)"), UNCHECKED)
    assert r.status is Status.CRASHED and r.fault == "exit:0"


def test_stdout_flood_is_crash(relu):
    cfg = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, static_checks=False, max_log_bytes=200_000)
    r = judge(relu, relu_answer("while True:\n    print('x' * 10000)"), cfg)
    assert r.status is Status.CRASHED and r.fault == "output_flood"


def test_host_oom(relu):
    cfg = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, static_checks=False, cpu_memory_gb=6)
    r = judge(relu, relu_answer("big = torch.empty(4 * 10**9)"), cfg)
    assert r.status is Status.OOM


def test_judge_keeps_working_after_a_crash(relu):
    assert judge(relu, relu_answer("import ctypes\nctypes.string_at(0)"), UNCHECKED).status is Status.CRASHED
    assert judge(relu, relu_answer(), CPU).status is Status.OK


@pytest.mark.parametrize(
    "answer, needle",
    [
        ("", "no code"),
        ("   \n\n", "no code"),
        ("I cannot help with that.", "syntax error"),
        ("x = 1\n", "does not define class ModelNew"),
        ("```python\ndef broken(:\n```", "syntax error"),
        ("a" * 1_000_001, "limit"),
        (b"class ModelNew:\n    pass\n\xff\xfe", "not valid UTF-8"),
    ],
)
def test_invalid_answers(relu, answer, needle):
    r = judge(relu, answer, CPU)
    assert r.status is Status.INVALID_ANSWER
    assert needle in r.message


def test_wrong_constructor_signature_is_invalid(relu):
    answer = relu_answer().replace("def __init__(self):", "def __init__(self, hidden, depth):")
    r = judge(relu, answer, CPU)
    assert r.status is Status.INVALID_ANSWER and "init inputs" in r.error


def test_wrong_forward_signature_is_invalid(relu):
    answer = relu_answer().replace("def forward(self, x):", "def forward(self, x, y, z):")
    r = judge(relu, answer, CPU)
    assert r.status is Status.INVALID_ANSWER and "forward" in r.error


def test_modelnew_not_a_module_is_invalid(relu):
    answer = HEADER + RELU_KERNEL + "\nclass ModelNew:\n    pass\n"
    r = judge(relu, answer, CPU)
    assert r.status is Status.INVALID_ANSWER


def test_task_without_model_is_a_task_error():
    task = Task(task_id="broken", source="import torch\ndef get_inputs():\n    return []\n")
    with pytest.raises(TaskError, match="does not define Model"):
        judge(task, relu_answer(), CPU)


def test_task_whose_get_inputs_fails_is_a_task_error():
    source = load_builtin("relu")[0].source.replace("return [torch.randn(batch_size, dim)]", "return [undefined]")
    with pytest.raises(TaskError, match="get_inputs"):
        judge(Task(task_id="bad_inputs", source=source), relu_answer(), CPU)


def test_result_json_round_trip(relu):
    from kernelgym.judge import EvalResult

    r = judge(relu, relu_answer(), CPU)
    again = EvalResult.from_json(r.to_json())
    assert again == r


def test_tampering_with_input_generation_is_caught(relu):
    # the child regenerates inputs from the revealed seed; a patched RNG changes them and the digest
    extra = "_randn = torch.randn\ntorch.randn = lambda *a, **k: _randn(*a, **k).abs()"
    r = judge(relu, relu_answer(extra=extra), UNCHECKED)
    assert r.status is Status.CHEAT and any(c.rule == "RH-20" for c in r.cheats)


def test_value_keyed_cache_is_caught_by_the_probe(relu):
    # caches keyed on a few sampled elements pass every fresh trial but return the old output
    # when the probe swaps values elsewhere; static rules off, so only the run-time check can see it
    answer = relu_answer(init="self.memo = {}", forward_body="""
key = (tuple(x.shape), float(x.reshape(-1)[0]), float(x.reshape(-1)[-1]))
if key in self.memo:
    return self.memo[key]
out = torch.empty_like(x)
relu_kernel[(triton.cdiv(x.numel(), 1024),)](x.contiguous(), out, x.numel(), BLOCK=1024)
self.memo[key] = out
return out
""")
    r = judge(relu, answer, JudgeConfig(engine="inprocess", device="cpu", static_checks=False))
    # the host reads (float(x[0])) are torch ops the run-time audit names too (RH-01)
    assert r.status is Status.CHEAT and "RH-11" in {c.rule for c in r.cheats}, r.message


def test_changing_global_torch_settings_is_flagged(relu):
    answer = relu_answer(extra="torch.set_num_threads(torch.get_num_threads() + 1)\ntorch.backends.cuda.matmul.allow_tf32 = True")
    r = judge(relu, answer, JudgeConfig(engine="inprocess", device="cpu", static_checks=False))
    assert r.status is Status.CHEAT
    assert {c.rule for c in r.cheats} == {"RH-14", "RH-24"}, r.cheats


PARTIAL_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
    def forward(self, a, b):
        return torch.relu(a @ b)

def get_inputs():
    return [torch.randn(32, 32), torch.randn(32, 32)]

def get_init_inputs():
    return []
"""
PARTIAL_ANSWER = HEADER + RELU_KERNEL + """
class ModelNew(nn.Module):
    def forward(self, a, b):
        y = torch.matmul(a, b)
        out = torch.empty_like(y)
        relu_kernel[(triton.cdiv(y.numel(), 1024),)](y, out, y.numel(), BLOCK=1024)
        return out
"""


def test_partial_replacement_is_a_task_or_config_policy():
    strict = Task("mm_relu", PARTIAL_TASK)
    lenient = Task("mm_relu", "KERNELGYM_ALLOW_TORCH_OPS = True\n" + PARTIAL_TASK)
    assert not strict.allows_torch_ops() and lenient.allows_torch_ops()
    r = judge(strict, PARTIAL_ANSWER, CPU)
    assert r.status is Status.CHEAT and "RH-01" in {c.rule for c in r.cheats}
    assert judge(lenient, PARTIAL_ANSWER, CPU).status is Status.OK
    # the config overrides the task either way
    allow = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, allow_torch_ops=True)
    assert judge(strict, PARTIAL_ANSWER, allow).status is Status.OK
    forbid = JudgeConfig(engine="inprocess", device="cpu", timeout_s=60, allow_torch_ops=False)
    assert judge(lenient, PARTIAL_ANSWER, forbid).status is Status.CHEAT


def test_a_copy_of_the_input_fails_relu_on_rand_inputs(relu):
    """KernelBench draws ReLU's input with torch.rand: on [0, 1) relu is the identity, so the judge's
    other distributions must bring negative values (they were folded to |.| before, and a Triton
    copy kernel passed every trial), while an honest ReLU still passes."""
    rand_relu = Task("relu_rand", relu.source.replace("torch.randn(", "torch.rand("))
    assert rand_relu.source != relu.source
    copy = relu_answer().replace("tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0)", "tl.load(x_ptr + offs, mask=m)")
    r = judge(rand_relu, copy, CPU)
    assert r.status is Status.WRONG_OUTPUT, r.message
    assert {t.distribution for t in r.trials if not t.passed} <= {"signed", "wide", "huge"}
    honest = judge(rand_relu, relu_answer(), CPU)
    assert honest.status is Status.OK, honest.message


def test_the_replay_engine_reports_each_process_cpu_time(relu):
    # Read from /proc by the parent before each process exits: the host cost of one evaluation, by process.
    r = judge(relu, relu_answer(), JudgeConfig(engine="replay", device="cpu", timeout_s=60))
    assert r.status is Status.OK, r.message
    procs = {k: v for k, v in r.cpu_seconds.items() if not k.startswith("judge") and "." not in k}
    assert set(procs) == {"answer", "replay"}
    assert all(v > 0 for v in procs.values()), r.cpu_seconds  # each at least imported torch
    # the trusted thread's own CPU (its process's GIL is shared by every evaluation in flight there), whole
    # and per phase: each phase's part is within the whole
    assert r.cpu_seconds["judge"] > 0
    assert {"judge_parse", "judge_correctness"} <= set(r.cpu_seconds)
    assert all(v <= r.cpu_seconds["judge"] + 1e-3 for k, v in r.cpu_seconds.items() if k.startswith("judge_"))
    # and each process's CPU by request op, read from /proc around each request: within the process's whole
    assert {"answer.record", "replay.replay_trial"} <= set(r.cpu_seconds)
    for proc in ("answer", "replay"):
        ops = [v for k, v in r.cpu_seconds.items() if k.startswith(proc + ".") and "~" not in k]
        assert all(v >= 0 for v in ops) and sum(ops) <= r.cpu_seconds[proc] + 0.05, r.cpu_seconds


def test_process_cpu_seconds_reads_proc_and_none_for_a_missing_process():
    import os
    import subprocess
    import sys

    from kernelgym.judge.proc_cpu import process_cpu_seconds

    assert process_cpu_seconds(os.getpid()) > 0  # this process has imported torch
    assert 0 < process_cpu_seconds(os.getpid(), children=False) <= process_cpu_seconds(os.getpid())
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert process_cpu_seconds(gone.pid) is None  # reaped: no /proc entry


def test_thread_cpu_seconds_splits_a_process_by_thread_and_names_the_others():
    import os
    import threading
    import time

    from kernelgym.judge.proc_cpu import other_threads, thread_cpu_seconds

    burnt, read = threading.Event(), threading.Event()

    def burn() -> None:  # a fixed amount of this thread's own CPU, however loaded the host; alive until read
        start = time.thread_time()
        while time.thread_time() - start < 0.2:
            pass
        burnt.set()
        read.wait()

    before = thread_cpu_seconds(os.getpid())
    assert os.getpid() in before and all(isinstance(n, str) and s >= 0 for n, s in before.values())
    worker = threading.Thread(target=burn)
    worker.start()
    burnt.wait()
    others = other_threads(os.getpid(), before, thread_cpu_seconds(os.getpid()))
    read.set()
    worker.join()
    assert sum(s for _, s in others) >= 0.1, others  # the worker's CPU, under its OS thread name
    assert thread_cpu_seconds(2 ** 22 + 7) == {}  # no such process


def test_candidate_processes_give_torch_one_host_thread_unless_told_otherwise():
    import subprocess
    import sys

    from kernelgym.judge.candidate_env import THREADS_VAR

    code = "from kernelgym.judge.candidate_env import limit_host_threads; print(limit_host_threads())"
    import os

    def threads(value: str | None) -> int:
        env = {k: v for k, v in os.environ.items() if k != THREADS_VAR}
        if value is not None:
            env[THREADS_VAR] = value
        return int(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                  check=True).stdout.split()[-1])

    assert threads(None) == 1
    assert threads("2") == 2
    assert threads("junk") == 1
    assert threads("0") >= 1  # torch's own choice
