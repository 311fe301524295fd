"""A fork server for candidate processes: torch and triton imported once, a fork per candidate.

A candidate process started with `python -m kernelgym.judge.child` pays an interpreter start and
the torch and triton imports (several seconds of CPU on a GPU machine) before it creates its CUDA
context. A warm pool that starts one per evaluation spends most of its CPU on that. The fork server
(`python -m kernelgym.judge.forkserver FD`, one per warm pool) does the imports once, never touches
CUDA, and forks a candidate process per request; the child then creates its own CUDA context as
before. Isolation is that of an exec'd child: before any answer code runs, each forked process has
its own session (killed as a group), scratch dir as cwd, environment without credentials, stdio,
pipes, output area and resource limits, and it is still used by exactly one evaluation.

One thing does not come with a fork: `/proc/PID/environ` shows the environment a process was
exec'd with, so a forked child would show the server's, without its evaluation's RH-27 marker, and
`kill_marked` could not find what the answer leaves running. The server therefore starts with a
placeholder marker, and each child overwrites the placeholder's bytes in that area with its own
marker before anything else runs: the child and every process it forks carry it there, processes
it exec's get it from `os.environ`, exactly as with an exec'd child. The server checks this works
on start (`_check_marker`) and refuses to serve where it does not.

Messages (a SOCK_SEQPACKET pair, JSON, descriptors passed alongside):

    client -> server   {"cwd", "env", "mem", "device"} + fds [in, out, log, area?]
    server -> client   {"ready": true} once, then {"pid": N} or {"error": "..."} per request,
                       {"exit": pid, "returncode": rc} when a child it forked has exited
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

log = logging.getLogger(__name__)

MARKER_PLACEHOLDER = "0" * 24  # the length of `secrets.token_hex(12)`, the marker it stands for
_MAX_MESSAGE = 1 << 20


class ForkServerFailed(OSError):
    """The fork server did not start, refused a request, or is gone."""


class ForkedProcess:
    """The parent's handle on a process the fork server forked: the part of `subprocess.Popen` that
    `CandidateProcess` uses (`pid`, `stdout`, `returncode`, `poll`, `wait`). Its exit status comes
    from the server, which is its real parent."""

    def __init__(self, server: "ForkServer", pid: int, stdout: IO[bytes]) -> None:
        self.pid, self.stdout, self._server = pid, stdout, server
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            self.returncode = self._server._exit_status(self.pid, 0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            self.returncode = self._server._exit_status(self.pid, timeout)
            if self.returncode is None:
                raise subprocess.TimeoutExpired(f"forked candidate {self.pid}", timeout or 0.0)
        return self.returncode


class ForkServer:
    """The client side of one fork server process for one device type."""

    def __init__(self, device: str, scratch: Path, startup_timeout_s: float = 300.0) -> None:
        """`scratch`: the server's own dir (its HOME, TMPDIR and caches; the children get theirs)."""
        from kernelgym.judge.candidate_env import MARKER_VAR, child_env

        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = child_env(scratch, device)
        env[MARKER_VAR] = MARKER_PLACEHOLDER
        self.device = device
        self._sock = ours
        self._lock = threading.Lock()  # one request and its reply at a time
        self._cond = threading.Condition()
        self._replies: list[dict[str, Any]] = []
        self._exits: dict[int, int] = {}
        self._children: set[int] = set()
        self._gone = False
        self._closing = False
        try:
            self._proc = subprocess.Popen([sys.executable, "-P", "-m", "kernelgym.judge.forkserver", str(theirs.fileno())],
                                          pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, cwd=scratch,
                                          env=env, start_new_session=True)
        finally:
            theirs.close()
        self._reader = threading.Thread(target=self._read, name=f"forkserver-{device}", daemon=True)
        self._reader.start()
        reply = self._next_reply(startup_timeout_s)
        if not reply.get("ready"):
            self.close()
            raise ForkServerFailed(f"fork server for {device} did not start: {reply.get('error', reply)}")

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return not self._gone and self._proc.poll() is None

    def spawn(self, in_fd: int, out_fd: int, area_fd: int, cpu_memory_bytes: int, warm_device: str,
              cwd: Path, env: dict[str, str]) -> ForkedProcess:
        """Fork one candidate process, which runs `kernelgym.judge.child` on these descriptors in
        `cwd` with exactly `env` (its marker included); its stdout and stderr come back as `stdout`."""
        log_r, log_w = os.pipe()
        fds = [in_fd, out_fd, log_w] + ([area_fd] if area_fd >= 0 else [])
        msg = {"cwd": str(cwd), "env": env, "mem": cpu_memory_bytes, "device": warm_device}
        try:
            with self._lock:
                try:
                    socket.send_fds(self._sock, [json.dumps(msg).encode()], fds)
                except OSError as e:
                    raise ForkServerFailed(f"fork server for {self.device} is gone ({e})") from None
                reply = self._next_reply(30.0)
        except BaseException:
            os.close(log_r)
            raise
        finally:
            os.close(log_w)
        if "pid" not in reply:
            os.close(log_r)
            raise ForkServerFailed(f"fork server for {self.device} could not fork: {reply.get('error', reply)}")
        with self._cond:
            self._children.add(reply["pid"])
            self._exits.pop(reply["pid"], None)  # a status an earlier process of this pid left unread
        return ForkedProcess(self, reply["pid"], os.fdopen(log_r, "rb"))

    def close(self) -> None:
        """Stop the server; it kills every child it forked that is still running, then exits."""
        if self._closing:
            return
        self._closing = True
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self._proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._reader.join(timeout=5)
        self._sock.close()

    def _next_reply(self, timeout: float) -> dict[str, Any]:
        with self._cond:
            if not self._cond.wait_for(lambda: self._replies or self._gone, timeout):
                return {"error": f"no reply in {timeout:.0f} s"}
            return self._replies.pop(0) if self._replies else {"error": "the fork server exited"}

    def _exit_status(self, pid: int, timeout: float | None) -> int | None:
        """`pid`'s exit status, taken out of the table: its handle keeps it, and the table does not
        grow over a long run nor answer for a later process the pid is reused by."""
        with self._cond:
            self._cond.wait_for(lambda: pid in self._exits or self._gone, timeout)
            return self._exits.pop(pid, None)

    def _read(self) -> None:
        while True:
            try:
                data = self._sock.recv(_MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            msg = json.loads(data)
            with self._cond:
                if "exit" in msg:
                    self._exits[msg["exit"]] = msg["returncode"]
                    self._children.discard(msg["exit"])
                else:
                    self._replies.append(msg)
                self._cond.notify_all()
        # The server is gone, and with it the exit statuses of its children: they are orphans now.
        # Kill them, so every handle reads as killed rather than waiting for a status never sent
        # (an evaluation in flight reads as `oom`, which the judge re-runs in a process of its own).
        with self._cond:
            self._gone = True
            for pid in self._children:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
                self._exits.setdefault(pid, -signal.SIGKILL)
            self._cond.notify_all()
        if not self._closing:
            log.warning("fork server %d for %s closed its socket", self._proc.pid, self.device)


# -- the server side ---------------------------------------------------------------------------

def _environ_area() -> tuple[int, int]:
    """Start and end address of this process's exec-time environment (what /proc/PID/environ shows)."""
    with open("/proc/self/stat", "rb") as fh:
        fields = fh.read().rsplit(b")", 1)[1].split()
    return int(fields[47]), int(fields[48])  # env_start, env_end: fields 50 and 51 of proc(5)


def _write_marker(var: str, marker: str) -> None:
    """Overwrite the placeholder marker in the exec-time environment with `marker` (same length)."""
    import ctypes

    old, new = f"{var}={MARKER_PLACEHOLDER}".encode(), f"{var}={marker}".encode()
    if len(old) != len(new):
        raise ValueError(f"a marker must have {len(MARKER_PLACEHOLDER)} characters")
    start, end = _environ_area()
    at = ctypes.string_at(start, end - start).find(old + b"\0")
    if at < 0:
        raise RuntimeError("the placeholder marker is not in this process's environment area")
    ctypes.memmove(start + at, new, len(new))


def _check_marker(var: str) -> str | None:
    """Fork a child that writes a marker and read it back from outside, as `kill_marked` does; why
    not, if it does not work here."""
    marker = "f" * len(MARKER_PLACEHOLDER)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            _write_marker(var, marker)
            os.write(w, b"1")
            time.sleep(10)  # until killed: the marker is read from outside while it lives
        finally:
            os._exit(0)
    os.close(w)
    try:
        if os.read(r, 1) != b"1":
            return "the test child could not write its marker"
        with open(f"/proc/{pid}/environ", "rb") as fh:
            if f"{var}={marker}".encode() not in fh.read():
                return "a written marker does not show in /proc/PID/environ"
        return None
    finally:
        os.close(r)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)


def _preload() -> None:
    """Everything a candidate process imports before the answer; never CUDA (each child makes its own context)."""
    import importlib.util  # noqa: F401
    import inspect  # noqa: F401

    import numpy  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401  (the recorder's first call imports it: ~1 s of CPU in every child here)
    import torch.profiler  # noqa: F401
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    from kernelgym.judge import (  # noqa: F401
        child, errors, inputs, interpreter, kernel_source, launch_hook, profiling, protocol, recorder, replay,
        replay_session, timing, trace, triton_warmup,
    )
    from kernelgym.tasks import task  # noqa: F401

    if torch.cuda.is_initialized():
        raise RuntimeError("CUDA was initialised while preloading: forked children could not use it")


def _freeze_heap() -> None:
    """Move every object the preload made (~300,000: torch, triton, the judge) out of the cyclic collector's reach.
    Each child inherits them; without this, every full collection in a child walks all of them (0.17 CPU-s each on
    the development machine) and writes to each one's header, copying the server's whole heap page by page into
    the child (copy-on-write). Frozen objects are never collected: they live as long as the server anyway."""
    import gc

    gc.collect()  # what the imports left as garbage goes first, not into the permanent generation
    gc.freeze()


def _serve(sock: socket.socket) -> None:
    from kernelgym.judge.candidate_env import MARKER_VAR

    try:
        _preload()
        _freeze_heap()
        why = _check_marker(MARKER_VAR)
    except Exception as e:  # noqa: BLE001 - reported to the client, which falls back to exec'd children
        why = f"{type(e).__name__}: {e}"
    if why:
        sock.send(json.dumps({"error": why}).encode())
        return
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    sock.send(json.dumps({"ready": True}).encode())
    try:
        while True:
            ready, _, _ = select.select([sock, wake_r], [], [])
            if wake_r in ready:
                os.read(wake_r, 4096)
                _reap(sock, children)
            if sock in ready:
                data, fds, _, _ = socket.recv_fds(sock, _MAX_MESSAGE, 8)
                if not data:
                    return
                try:
                    pid = _fork_child(json.loads(data), fds, sock, (wake_r, wake_w))
                    children.add(pid)
                    reply: dict[str, Any] = {"pid": pid}
                except OSError as e:
                    reply = {"error": f"fork failed: {e}"}
                finally:
                    for fd in fds:
                        os.close(fd)
                sock.send(json.dumps(reply).encode())
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        for pid in children:
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _reap(sock: socket.socket, children: set[int]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in children:
            children.discard(pid)
            sock.send(json.dumps({"exit": pid, "returncode": os.waitstatus_to_exitcode(status)}).encode())


def _fork_child(msg: dict[str, Any], fds: list[int], sock: socket.socket, wake: tuple[int, int]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    server = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        _die_with(server)
        code = _become_candidate(msg, fds, sock, wake)
    except BaseException:  # noqa: BLE001 - the child must never return into the server's loop
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _die_with(server: int) -> None:
    """Be killed when the server dies, however it dies. Its clean exit kills its children itself and
    its client kills them when the server alone dies; but a host that kills a worker's whole tree
    (Ray kills an actor's child processes with it) leaves nobody to: without this, an answer stuck
    in an endless loop ran on after its Ray actor and fork server were gone."""
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != server:  # the server died before the request took effect
        os._exit(1)


def _become_candidate(msg: dict[str, Any], fds: list[int], sock: socket.socket, wake: tuple[int, int]) -> int:
    """In the forked child: shed the server's state, take the evaluation's, run the child's loop."""
    import random
    import tempfile

    from kernelgym.judge import child
    from kernelgym.judge.candidate_env import MARKER_VAR

    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    sock.close()
    for fd in wake:
        os.close(fd)
    os.setsid()
    in_fd, out_fd, log_fd = fds[:3]
    area_fd = fds[3] if len(fds) > 3 else -1
    _write_marker(MARKER_VAR, msg["env"][MARKER_VAR])
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(null)
    os.close(log_fd)
    for fd in (in_fd, out_fd):
        os.set_inheritable(fd, True)  # as `pass_fds` leaves them in an exec'd child
    # No scratch dir on sys.path, the server's (shared by all its children: a module one answer wrote there
    # would be imported by a later one) or the child's own (red-team round s20: a module planted in a scratch
    # dir that exists before its process shadows what that process imports later). The server runs with
    # `python -P`, as exec'd children do; an empty entry (cwd) from PYTHONPATH is dropped here too.
    server_cwd = os.getcwd()
    sys.path[:] = [entry for entry in sys.path if entry not in (server_cwd, "", msg["cwd"])]
    os.chdir(msg["cwd"])
    os.environ.clear()
    os.environ.update(msg["env"])
    tempfile.tempdir = None  # computed from the server's TMPDIR if anything asked already
    random.seed()
    args = [str(in_fd), str(out_fd), str(msg["mem"]), str(area_fd)] + ([msg["device"]] if msg["device"] else [])
    sys.argv = ["kernelgym.judge.child", *args]
    child.main(args)
    return 0


def main() -> None:
    logging.basicConfig(level=logging.WARNING, format="[forkserver %(process)d] %(levelname)s %(message)s")
    sock = socket.socket(fileno=int(sys.argv[1]))
    try:
        _serve(sock)
    finally:
        sock.close()


if __name__ == "__main__":
    main()
