"""The fork server: a forked candidate process is set up as an exec'd one would be, its exit status
is reported, and nothing it forked outlives the server."""

import os
import signal
import time
from pathlib import Path

import pytest

from kernelgym.judge.forkserver import ForkServer, ForkServerFailed
from kernelgym.judge.sandbox import MARKER_VAR, CandidateProcess
from kernelgym.worker.warm_pool import WarmPool


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("forkserver")
    fs = ForkServer("cpu", root)
    yield fs
    fs.close()


def forked(server, tmp_path) -> CandidateProcess:
    proc = CandidateProcess.prespawn("cpu", 60, tmp_path, forkserver=server)
    proc.wait_ready()
    return proc


def open_fds(pid: int) -> set[int]:
    return {int(fd) for fd in os.listdir(f"/proc/{pid}/fd")}


def test_a_forked_process_is_set_up_like_an_exec_d_one(server, tmp_path):
    with forked(server, tmp_path) as proc:
        pid = proc.proc.pid
        assert os.getsid(pid) == pid  # a session of its own: killed as a group
        assert Path(os.readlink(f"/proc/{pid}/cwd")) == proc.scratch
        # `kill_marked` reads the exec-time environment: it must carry this evaluation's marker.
        environ = Path(f"/proc/{pid}/environ").read_bytes()
        assert f"{MARKER_VAR}={proc.marker}".encode() in environ
        # stdio, the two pipes and the output area; none of the server's descriptors
        assert len(open_fds(pid)) == 6, sorted(open_fds(pid))
        assert proc.proc.poll() is None
    assert proc.proc.returncode == -signal.SIGKILL


def test_two_forked_processes_carry_different_markers(server, tmp_path):
    with forked(server, tmp_path) as a, forked(server, tmp_path) as b:
        assert a.marker != b.marker
        env_b = Path(f"/proc/{b.proc.pid}/environ").read_bytes()
        assert f"{MARKER_VAR}={a.marker}".encode() not in env_b


def test_the_exit_status_comes_back_from_the_server(server, tmp_path):
    proc = forked(server, tmp_path)
    try:
        os.kill(proc.proc.pid, signal.SIGSEGV)
        assert proc.proc.wait(timeout=60) == -signal.SIGSEGV
    finally:
        proc.close()


def test_when_the_server_dies_its_children_are_killed_and_spawns_fail(tmp_path):
    (tmp_path / "server").mkdir()
    fs = ForkServer("cpu", tmp_path / "server")
    try:
        proc = forked(fs, tmp_path)
        os.kill(fs.pid, signal.SIGKILL)
        assert proc.proc.wait(timeout=60) == -signal.SIGKILL
        deadline = time.monotonic() + 60
        while os.path.exists(f"/proc/{proc.proc.pid}") and _state(proc.proc.pid) != "Z":
            assert time.monotonic() < deadline, "the orphaned child is still running"
            time.sleep(0.05)
        assert not fs.alive()
        with pytest.raises(ForkServerFailed):
            CandidateProcess.prespawn("cpu", 60, tmp_path, forkserver=fs)
        proc.close()
    finally:
        fs.close()


def test_closing_the_server_kills_what_it_forked(tmp_path):
    (tmp_path / "server").mkdir()
    fs = ForkServer("cpu", tmp_path / "server")
    proc = forked(fs, tmp_path)
    fs.close()
    assert proc.proc.wait(timeout=60) == -signal.SIGKILL
    proc.close()


def test_a_pool_restarts_a_dead_server():
    with WarmPool("cpu", 1) as pool:
        assert pool.wait_ready(timeout=60)
        first = pool.stats()["fork_server"]
        (idle,) = list(pool._ready)
        assert first is not None
        os.kill(first, signal.SIGKILL)
        assert idle.proc.wait(timeout=60) == -signal.SIGKILL  # an orphan without its server: killed
        deadline = time.monotonic() + 60
        while True:  # the idle process died with its server; its replacement needs a new server
            proc = pool.take(time.monotonic() + 30, 1 << 20, 1 << 20)
            if proc is not None:
                break
            assert time.monotonic() < deadline, pool.stats()
            time.sleep(0.1)
        with proc:
            assert proc.proc.poll() is None
        second = pool.stats()["fork_server"]
        assert second not in (None, first)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_an_exit_status_is_read_once_and_not_kept(server, tmp_path):
    proc = forked(server, tmp_path)
    proc.close()
    assert proc.proc.returncode == -signal.SIGKILL
    assert proc.proc.pid not in server._exits  # a later process with this pid must not read it
    assert proc.proc.poll() == -signal.SIGKILL  # the handle keeps it


_CLIENT = """
import sys, time
from pathlib import Path
from kernelgym.judge.forkserver import ForkServer
from kernelgym.judge.sandbox import CandidateProcess

root = Path(sys.argv[1])
(root / "server").mkdir()
fs = ForkServer("cpu", root / "server")
proc = CandidateProcess.prespawn("cpu", 600, root, forkserver=fs)
proc.wait_ready()
proc.assign(time.monotonic() + 600, 1 << 20, 1 << 20)
(root / "endless.py").write_text("while True:\\n    pass\\n")
proc.send({"op": "load", "code_path": str(root / "endless.py"), "device": "cpu", "init_inputs": [],
           "init_seed": 0, "num_inputs": 1, "task_source": "def get_inputs():\\n    return []\\n\\n\\ndef get_init_inputs():\\n    return []\\n",
           "task_size": "small"})
print(fs.pid, proc.proc.pid, flush=True)
time.sleep(600)
"""


def test_a_busy_child_dies_when_its_client_and_server_are_killed_together(tmp_path):
    # What a Ray actor's death does: the actor and its child processes (the fork server) are
    # SIGKILLed, so neither the server's own exit path nor the client's cleanup runs; a candidate
    # stuck in an endless loop never reads its closed pipe either.
    import subprocess
    import sys

    client = subprocess.Popen([sys.executable, "-c", _CLIENT, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    child_pid = 0
    try:
        server_pid, child_pid = map(int, client.stdout.readline().split())
        deadline = time.monotonic() + 60
        while _state(child_pid) != "R":  # the child reaches the answer's loop (a loaded machine may take a while)
            assert time.monotonic() < deadline, _state(child_pid)
            time.sleep(0.05)
        client.kill()
        os.kill(server_pid, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while _state(child_pid) not in ("Z", "gone"):
            assert time.monotonic() < deadline, "the candidate outlived its client and server"
            time.sleep(0.05)
    finally:
        client.kill()
        client.wait()
        if child_pid and _state(child_pid) not in ("Z", "gone"):
            os.kill(child_pid, signal.SIGKILL)  # a failed run leaves no endless loop behind


FROZEN = """
import gc, os
from kernelgym.judge.forkserver import _freeze_heap, _preload
_preload()
_freeze_heap()
r, w = os.pipe()
if os.fork() == 0:  # a candidate: the collector walks only what the child itself makes
    os.write(w, f"{gc.get_freeze_count()} {len(gc.get_objects())}".encode())
    os._exit(0)
os.wait()
print(os.read(r, 100).decode())
"""


def test_a_forked_child_s_collector_skips_the_preloaded_heap():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FROZEN], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    assert done.returncode == 0, done.stderr[-2000:]
    frozen, tracked = map(int, done.stdout.split()[-2:])
    assert frozen > 100_000 and tracked < frozen / 10, done.stdout
