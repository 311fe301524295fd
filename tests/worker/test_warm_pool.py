"""Warm candidate processes: same verdicts as fresh ones, each used once, deadline from hand-out."""

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from kernelgym.judge import JudgeConfig, Status, judge
from kernelgym.judge.sandbox import register_source, unregister_source
from kernelgym.tasks import load_builtin
from kernelgym.worker.warm_pool import WarmPool
from tests.answers import relu_answer
from tests.judge.test_leftovers import SURVIVOR

EXPLOITS = Path(__file__).parents[1] / "redteam" / "exploits"
BASE = {"engine": "inprocess", "device": "cpu", "timeout_s": 60, "num_trials": 1, "seed": 1234}
ANSWERS = {
    "ok": (relu_answer(), {}),
    "crash": (relu_answer("import ctypes\nctypes.string_at(0)"), {"static_checks": False}),
    # Endless at import: fresh and warm are both killed before the answer loads, however long a fresh
    # start takes on a loaded machine (an endless forward let a slow fresh start die one phase earlier).
    "timeout": (relu_answer(extra="while True:\n    pass"), {"static_checks": False, "timeout_s": 5}),
    "oom": (relu_answer("big = torch.empty(4 * 10**9)"), {"static_checks": False, "cpu_memory_gb": 6}),
    "cheat_settings": (relu_answer(extra="torch.set_num_threads(torch.get_num_threads() + 1)"),
                       {"static_checks": False}),
    "cheat_daemon": ((EXPLOITS / "rh27_relu_daemon_escape.py").read_text(), {"static_checks": False}),
    "cheat_group_survivor": (SURVIVOR, {"static_checks": False}),
}
# An escape by setsid: where seccomp confines the candidate, setsid fails and nothing escapes (ok). (The
# fork-then-setsid escape is not here: its forked copy fails in a race with its parent, so its verdict varies.)
SETSID_ESCAPES = {"cheat_daemon"}


@pytest.fixture(scope="module")
def relu():
    return load_builtin("relu")[0]


@pytest.fixture(scope="module", params=[True, False], ids=["forked", "exec"])
def pool(request):
    with WarmPool("cpu", 2, fork_server=request.param) as p:
        assert p.wait_ready(timeout=60), p.stats()
        assert (p.stats()["fork_server"] is not None) == request.param, p.stats()
        yield p


@contextlib.contextmanager
def fresh_spawns(pool):
    unregister_source("cpu", pool)
    try:
        yield
    finally:
        register_source("cpu", pool)


def spy_on_take(pool, monkeypatch):
    taken = []
    real = pool.take

    def take(*args, **kwargs):
        proc = real(*args, **kwargs)
        taken.append(proc)
        return proc

    monkeypatch.setattr(pool, "take", take)
    return taken


def verdict(r):
    return (r.status, r.fault, r.compiled, r.correct, sorted({c.rule for c in r.cheats}),
            [(t.passed, t.max_abs_error) for t in r.trials])


@pytest.mark.parametrize("name", list(ANSWERS))
def test_warm_and_fresh_give_the_same_verdict(relu, pool, monkeypatch, name):
    answer, overrides = ANSWERS[name]
    config = JudgeConfig(**{**BASE, **overrides})
    taken = spy_on_take(pool, monkeypatch)
    with fresh_spawns(pool):
        fresh = judge(relu, answer, config)
    assert taken == []
    assert pool.wait_ready(count=1, timeout=60)
    warm = judge(relu, answer, config)
    assert len(taken) == 1 and taken[0] is not None, "the warm run did not use a warm process"
    assert verdict(warm) == verdict(fresh), (warm.message, fresh.message)
    expected = {"ok": Status.OK, "crash": Status.CRASHED, "timeout": Status.TIMEOUT, "oom": Status.OOM,
                "cheat_settings": Status.CHEAT, "cheat_daemon": Status.CHEAT,
                "cheat_group_survivor": Status.CHEAT}[name]
    if name in SETSID_ESCAPES and "seccomp" in warm.confinement:
        expected = Status.OK
    assert warm.status is expected, warm.message


def test_a_process_serves_one_evaluation_and_dies(relu, pool, monkeypatch):
    taken = spy_on_take(pool, monkeypatch)
    config = JudgeConfig(**BASE)
    for _ in range(2):
        assert pool.wait_ready(count=1, timeout=60)
        assert judge(relu, relu_answer(), config).status is Status.OK
    first, second = taken
    assert first.proc.pid != second.proc.pid
    for proc in taken:
        assert proc.proc.returncode is not None  # killed and reaped when its evaluation ended
        assert not proc.scratch.exists()
    assert pool.wait_ready(timeout=60)
    assert not {p.proc.pid for p in pool._ready} & {first.proc.pid, second.proc.pid}


def test_deadline_starts_at_hand_out(relu, pool, monkeypatch):
    limit = 15.0  # the judge below must finish within it on a loaded machine too
    assert pool.wait_ready(timeout=60)
    oldest = pool._ready[0]
    time.sleep(max(0.0, limit + 0.5 - (time.monotonic() - oldest.spawned_at)))
    taken = spy_on_take(pool, monkeypatch)
    before = time.monotonic()
    r = judge(relu, relu_answer(), JudgeConfig(**{**BASE, "timeout_s": limit}))
    assert r.status is Status.OK, r.message
    (proc,) = taken
    assert proc.spawned_at + limit < before  # a deadline counted from spawn would have passed already
    assert before + limit <= proc.deadline <= time.monotonic() + limit


def test_a_process_killed_while_idle_is_never_handed_out(pool):
    assert pool.wait_ready(timeout=60)
    victim = pool._ready[0]
    os.kill(victim.proc.pid, signal.SIGKILL)
    victim.proc.wait(timeout=10)
    died_before = pool.stats()["died_idle"]
    proc = pool.take(time.monotonic() + 30, 1 << 20, 1 << 20)
    try:
        assert proc is not None and proc is not victim and proc.proc.poll() is None
        assert pool.stats()["died_idle"] == died_before + 1
    finally:
        proc.close()


def test_a_caller_waits_for_a_starting_process_and_close_kills_the_idle_ones():
    with WarmPool("cpu", 1) as p:
        asked = time.monotonic()
        with p.take(asked + 30, 1 << 20, 1 << 20) as proc:  # none ready yet, one starting: worth the wait
            handed = time.monotonic()
            assert proc is not None and handed - asked > 0.5
            assert proc.deadline >= handed + 30 - 0.1  # the wait does not eat into the time limit
        assert p.wait_ready(timeout=60)
        (idle,) = list(p._ready)
    assert idle.proc.returncode is not None and not idle.scratch.exists() and not p.scratch_root.exists()
    assert p.take(time.monotonic() + 30, 1 << 20, 1 << 20) is None


def test_batch_pool_serves_a_cpu_batch_from_forked_processes(monkeypatch):
    from kernelgym.judge import sandbox
    from kernelgym.judge.sandbox import has_source
    from kernelgym.worker.warm_pool import batch_pool
    from tests.answers import relu_answer

    monkeypatch.setattr(sandbox, "_SOURCES", {})  # this module's `pool` fixture may be serving "cpu" right now
    (relu,) = load_builtin("relu")
    with batch_pool("cpu", 1) as pool:
        assert pool is not None and has_source("cpu")
        with batch_pool("cpu", 1) as inner:  # a process that already has a pool keeps it
            assert inner is None
        assert pool.wait_ready(2, timeout=300)  # a loaded machine starts them slowly: no fresh spawn races them
        r = judge(relu, relu_answer(), JudgeConfig(engine="replay", device="cpu", timeout_s=120))
        assert r.status is Status.OK, r.message
        assert pool.stats()["handed_out"] == 2  # the answer's process and the replay's
    assert not has_source("cpu")
    with batch_pool("cuda:0", 4) as none:  # GPU batches keep fresh processes
        assert none is None
    with batch_pool("cpu", 2, enabled=False) as none:
        assert none is None


def test_a_pool_with_a_triton_seed_plants_it_before_each_process_starts(tmp_path, monkeypatch):
    # The wiring of kernelgym.worker.triton_seed (opt-in, GPUs only; here forced on for the CPU, whose
    # start-up writes no Triton artifacts, so the seed is made by hand before the pool starts filling).
    import kernelgym.worker.warm_pool as warm_pool

    monkeypatch.setattr(warm_pool, "seeding_enabled", lambda device: True)
    pool = WarmPool("cpu", 1, scratch_root=tmp_path / "pool", fork_server=False)
    fake = tmp_path / "trusted-start-up"
    (fake / "triton" / "k").mkdir(parents=True)
    (fake / "triton" / "k" / "a.so").write_bytes(b"so")
    assert pool._seed is not None and pool._seed.harvest(fake)
    with pool:
        proc = pool.take(time.monotonic() + 60, 1 << 20, 1 << 20)
        assert proc is not None
        assert (proc.scratch / "triton" / "k" / "a.so").read_bytes() == b"so"
        assert pool.stats()["triton_seed"] is True
        proc.close()
