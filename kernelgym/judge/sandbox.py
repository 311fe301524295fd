"""The untrusted child process: spawn, talk to, watch and kill.

Each candidate gets its own process in a new session (so the whole group can be killed), a
private scratch directory as cwd, HOME and TMPDIR, a private Triton/Inductor cache, an
environment without credentials, capped output, and a wall-clock deadline.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from kernelgym.judge import protocol

_SECRET_MARKERS = ("TOKEN", "SECRET", "PASSWORD", "API_KEY", "ACCESS_KEY", "CREDENTIAL")
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


class ChildFailed(Exception):
    """The child is gone or misbehaved; `status`/`fault` say how (timeout, crashed, oom, flood)."""

    def __init__(self, status: str, fault: str, message: str) -> None:
        super().__init__(message)
        self.status, self.fault, self.message = status, fault, message


class CandidateProcess:
    """One child running `kernelgym.judge.child`; use as a context manager so it is always killed."""

    def __init__(self, scratch: Path, device: str, deadline: float, max_log_bytes: int,
                 max_message_bytes: int, cpu_memory_bytes: int = 0) -> None:
        self.scratch = scratch
        self.deadline = deadline
        self.max_log_bytes = max_log_bytes
        self.max_message_bytes = max_message_bytes
        self.flooded = False
        self.log_bytes = 0
        self._tail = bytearray()
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        env = _child_env(scratch, device)
        # Every descendant inherits this marker, so one that escapes the process group (setsid,
        # double fork) is still found and killed when the evaluation ends (RH-27).
        self.marker = secrets.token_hex(12)
        env[MARKER_VAR] = self.marker
        self.leftovers = 0
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernelgym.judge.child", str(to_child_r), str(from_child_w), str(cpu_memory_bytes)],
            pass_fds=(to_child_r, from_child_w),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=scratch,
            env=env,
            start_new_session=True,
        )
        os.close(to_child_r)
        os.close(from_child_w)
        self._reader = threading.Thread(target=self._drain_output, daemon=True)
        self._reader.start()

    def __enter__(self) -> "CandidateProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drain_output(self) -> None:
        assert self.proc.stdout is not None
        while True:
            chunk = self.proc.stdout.read1(65536)
            if not chunk:
                return
            self.log_bytes += len(chunk)
            self._tail += chunk
            del self._tail[:-4096]
            if self.log_bytes > self.max_log_bytes and not self.flooded:
                self.flooded = True
                self.kill()

    def output_tail(self) -> str:
        return self._tail.decode("utf-8", errors="replace")

    def request(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its reply; raises `ChildFailed` on any fault."""
        self.send(msg)
        return self.receive()

    def send(self, msg: dict[str, Any]) -> None:
        try:
            protocol.send(self._to_child, msg)
        except (BrokenPipeError, OSError):
            raise self._death() from None

    def receive(self) -> dict[str, Any]:
        """The next reply; raises `ChildFailed` on timeout, death, flood or a malformed reply."""
        try:
            reply = protocol.recv(self._from_child, self.max_message_bytes, self.deadline)
        except protocol.ChannelTimeout:
            self.kill()
            raise ChildFailed("timeout", "wall_clock", "the answer ran past the time limit and was killed") from None
        except (protocol.ChannelClosed, BrokenPipeError):
            raise self._death() from None
        except protocol.ChannelViolation as e:
            self.kill()
            raise ChildFailed("crashed", "protocol_violation", f"the answer's process sent an invalid reply: {e}") from None
        if not isinstance(reply, dict):
            self.kill()
            raise ChildFailed("crashed", "protocol_violation", "the answer's process sent a non-dict reply")
        return reply

    def _death(self) -> ChildFailed:
        from kernelgym.judge.errors import describe_exit

        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
        self._reader.join(timeout=2)
        if self.flooded:
            return ChildFailed("crashed", "output_flood",
                               f"the answer printed more than {self.max_log_bytes:,} bytes and was killed")
        fault = describe_exit(self.proc.returncode)
        tail = self.output_tail().strip()[-800:]
        if fault == "signal:SIGKILL" and time.monotonic() < self.deadline:
            return ChildFailed("oom", "killed", "the answer's process was killed (likely out of memory)\n" + tail)
        if "out of memory" in tail.lower():
            return ChildFailed("oom", "out_of_memory", f"the answer's process ran out of memory ({fault})\n{tail}")
        return ChildFailed("crashed", fault, f"the answer's process died ({fault})" + (f"\n{tail}" if tail else ""))

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        if self._to_child < 0:
            return
        if self.proc.poll() is None:
            try:
                protocol.send(self._to_child, {"op": "exit"})
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()  # the group too: anything the answer left behind dies with it
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self.leftovers += kill_marked(self.marker)
        # Close each fd exactly once: a second close could hit a number another judge thread reuses.
        fds, self._to_child, self._from_child = (self._to_child, self._from_child), -1, -1
        for fd in fds:
            if fd >= 0:
                os.close(fd)
        self._reader.join(timeout=2)


MARKER_VAR = "KERNELGYM_EVAL"


def kill_marked(marker: str) -> int:
    """SIGKILL every process whose environment carries this evaluation's marker; how many there were."""
    needle = f"{MARKER_VAR}={marker}".encode()
    killed = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as fh:
                if needle not in fh.read():
                    continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
        except (OSError, ProcessLookupError):
            continue
    return killed


def _child_env(scratch: Path, device: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}
    for sub in ("tmp", "triton", "inductor"):
        (scratch / sub).mkdir(exist_ok=True)
    env.update(
        HOME=str(scratch),
        TMPDIR=str(scratch / "tmp"),
        TRITON_CACHE_DIR=str(scratch / "triton"),
        TORCHINDUCTOR_CACHE_DIR=str(scratch / "inductor"),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p),
    )
    if device == "cpu":
        env["TRITON_INTERPRET"] = "1"
        env["CUDA_VISIBLE_DEVICES"] = ""
    else:
        env.pop("TRITON_INTERPRET", None)
    return env
