"""The untrusted child process: spawn, talk to, watch and kill.

Each candidate gets its own process in a new session (so the whole group can be killed), a
private scratch directory as cwd, HOME and TMPDIR, a private Triton/Inductor cache, an
environment without credentials, capped output, and a wall-clock deadline.

`CandidateProcess.start` is the one way the judge gets a process: a warm one from the pool
registered for the device (`register_source`, see `kernelgym.worker.warm_pool`) when one is
ready, else a fresh spawn. A warm process is still used by one evaluation only and killed after.
"""

from __future__ import annotations

import os
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from kernelgym import interrupt
from kernelgym.judge import protocol
from kernelgym.judge.candidate_env import MARKER_VAR, child_env
from kernelgym.judge.proc_cpu import other_threads, process_cpu_seconds, thread_cpu_seconds

if TYPE_CHECKING:
    from kernelgym.judge.forkserver import ForkedProcess, ForkServer


class ChildFailed(Exception):
    """The child is gone or misbehaved; `status`/`fault` say how (timeout, crashed, oom, flood)."""

    def __init__(self, status: str, fault: str, message: str) -> None:
        super().__init__(message)
        self.status, self.fault, self.message = status, fault, message


class CandidateProcess:
    """One child running `kernelgym.judge.child`; use as a context manager so it is always killed."""

    def __init__(self, scratch: Path, device: str, deadline: float, max_log_bytes: int,
                 max_message_bytes: int, cpu_memory_bytes: int = 0, announce_ready: bool = False,
                 forkserver: "ForkServer | None" = None) -> None:
        """`forkserver`: fork the process from this server (torch already imported) instead of
        starting a new interpreter; the process is the same from the answer's side."""
        self.scratch = scratch
        self.device = device
        self.deadline = deadline
        # The answer's clock runs from a request to its reply: time the parent spends between them
        # (waiting for a neighbour's measurement to free the GPU, comparing outputs) is not the
        # answer's, and under load it would otherwise time out honest answers.
        self._idle_since: float | None = None
        self.spawned_at = time.monotonic()
        self.owns_scratch = False  # a warm process's scratch dir is its own: removed on close
        self.exit_gracefully = True
        self.max_log_bytes = max_log_bytes
        self.max_message_bytes = max_message_bytes
        self.flooded = False
        self.transfer_seconds = 0.0  # reading output bytes off the pipe, summed over replies
        # The trusted replay process only: its CUDA tensors arrive as IPC handles opened through this
        # (`device_transfer.DeviceLink`); None: the area. `transfer_note` says why it was dropped.
        self.link: Any = None
        self.transfer_note = ""
        self.counters_file: str | None = None  # the replay's CUDA IPC counters file, removed after it closes
        self.log_bytes = 0
        self._tail = bytearray()
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        protocol.widen(from_child_w)  # replies too large for the output area come back this way
        self.area = protocol.OutputArea.create(_AREA_BYTES_CPU if device == "cpu" else _AREA_BYTES_GPU)
        area_fd = self.area.fd if self.area is not None else -1
        env = child_env(scratch, device)
        # Every descendant inherits this marker, so one that escapes the process group (setsid,
        # double fork) is still found and killed when the evaluation ends (RH-27).
        self.marker = secrets.token_hex(12)
        env[MARKER_VAR] = self.marker
        self.leftovers = 0
        self.cpu_seconds: float | None = None  # user + system CPU of the process and its reaped children, at close
        # ... and when a warm pool handed it to an evaluation: its start-up (imports, CUDA context, warm-up),
        # paid once per evaluation since processes are never reused (None: started for this evaluation)
        self.cpu_at_assign: float | None = None
        # CPU seconds per request op, read from /proc by this process around each `request`: where a process's
        # host CPU goes under load (issue 26's throughput), never part of a verdict
        self.op_cpu: dict[str, float] = {}
        # Of which threads other than the main one, by thread name (`proc_cpu.other_threads`): whose CPU it is
        self.op_thread_cpu: dict[str, float] = {}
        # -P: the scratch dir (cwd) is not on sys.path, so nothing written there is imported (red-team s20)
        argv = [sys.executable, "-P", "-m", "kernelgym.judge.child", str(to_child_r), str(from_child_w),
                str(cpu_memory_bytes), str(area_fd)] + ([device] if announce_ready else [])
        try:
            if forkserver is not None:
                self.proc: subprocess.Popen | ForkedProcess = forkserver.spawn(
                    to_child_r, from_child_w, area_fd, cpu_memory_bytes, device if announce_ready else "", scratch, env)
            else:
                self.proc = self._spawn(argv, to_child_r, from_child_w, area_fd, scratch, env)
        except BaseException:
            for fd in (to_child_r, from_child_w, self._to_child, self._from_child):
                os.close(fd)
            if self.area is not None:
                self.area.close()
            raise
        os.close(to_child_r)
        os.close(from_child_w)
        self._reader = threading.Thread(target=self._drain_output, daemon=True)
        self._reader.start()
        self._tracked = interrupt.track(self.kill)  # Ctrl-C kills it (its own session never sees one)

    @staticmethod
    def _spawn(argv: list[str], to_child_r: int, from_child_w: int, area_fd: int, scratch: Path,
               env: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen(
            argv,
            pass_fds=(to_child_r, from_child_w) + ((area_fd,) if area_fd >= 0 else ()),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=scratch,
            env=env,
            start_new_session=True,
        )

    @classmethod
    def start(cls, scratch: Path, device: str, deadline: float, max_log_bytes: int, max_message_bytes: int,
              cpu_memory_bytes: int = 0) -> "CandidateProcess":
        """The process for one evaluation: a warm one from the device's registered source when it has
        one ready (its limits, the deadline included, start now), else a fresh spawn."""
        with _SOURCES_LOCK:
            source = _SOURCES.get(_device_key(device))
        if source is not None:
            warm = source.take(deadline, max_log_bytes, max_message_bytes, cpu_memory_bytes)
            if warm is not None:
                return warm
        return cls(scratch, device, deadline, max_log_bytes, max_message_bytes, cpu_memory_bytes)

    @classmethod
    def prespawn(cls, device: str, startup_timeout_s: float, parent: Path | None = None,
                 forkserver: "ForkServer | None" = None,
                 prepare: "Callable[[Path], object] | None" = None) -> "CandidateProcess":
        """A process for a warm pool, in a scratch dir of its own under `parent` (removed on close),
        forked from `forkserver` when given; `prepare(scratch)` runs before it starts (the pool's Triton seed).
        Call `wait_ready`, then `assign` it to exactly one evaluation."""
        scratch = Path(tempfile.mkdtemp(prefix="kernelgym-warm-", dir=parent))
        try:
            if prepare is not None:
                prepare(scratch)
            proc = cls(scratch, device, time.monotonic() + startup_timeout_s, _STARTUP_LOG_BYTES,
                       _STARTUP_MESSAGE_BYTES, announce_ready=True, forkserver=forkserver)
        except BaseException:
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        proc.owns_scratch = True
        # Killed outright on close: the verdict is in by then, and a clean interpreter exit with
        # torch loaded takes ~0.6 s of the evaluation's slot. (Fresh processes keep today's exit.)
        proc.exit_gracefully = False
        return proc

    def wait_ready(self) -> None:
        """Block until the child reports its trusted start-up done; `ChildFailed` if it died or timed out."""
        reply = self.receive()
        if reply.get("op") != "ready":
            self.kill()
            raise ChildFailed("crashed", "protocol_violation", f"expected a ready message, got {sorted(reply)}")

    def assign(self, deadline: float, max_log_bytes: int, max_message_bytes: int, cpu_memory_bytes: int = 0) -> None:
        """Give a ready warm process to one evaluation with that evaluation's limits. The child is
        idle in `recv` until the first request, so resetting the output counters cannot race it."""
        if cpu_memory_bytes:
            # The fresh path sets this in the child before torch is imported; here it can only be
            # set from outside, after start-up, which is when the untrusted part begins anyway.
            resource.prlimit(self.proc.pid, resource.RLIMIT_AS, (cpu_memory_bytes, cpu_memory_bytes))
        self.log_bytes = 0
        self._tail.clear()
        self.max_log_bytes, self.max_message_bytes, self.deadline = max_log_bytes, max_message_bytes, deadline
        self._idle_since = None
        self.cpu_at_assign = process_cpu_seconds(self.proc.pid)

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

    def request(self, msg: dict[str, Any], yield_to: "Yieldable | None" = None) -> dict[str, Any]:
        """Send one request and wait for its reply; raises `ChildFailed` on any fault. With
        `yield_to` (the GPU lock share the request runs under), a request still running after
        `YIELD_GRACE_S` while a measurement waits is paused (SIGSTOP) until the measurement is done."""
        before, threads_before = process_cpu_seconds(self.proc.pid), thread_cpu_seconds(self.proc.pid)
        try:
            self.send(msg)
            if yield_to is not None:
                self._wait_yielding(yield_to)
            return self.receive()
        finally:
            after = process_cpu_seconds(self.proc.pid)
            if before is not None and after is not None:
                op = str(msg.get("op"))[:40]
                self.op_cpu[op] = round(self.op_cpu.get(op, 0.0) + after - before, 4)
                for comm, seconds in other_threads(self.proc.pid, threads_before, thread_cpu_seconds(self.proc.pid)):
                    key = f"{op}~{comm}"
                    self.op_thread_cpu[key] = round(self.op_thread_cpu.get(key, 0.0) + seconds, 4)

    def _wait_yielding(self, hold: "Yieldable") -> None:
        """Wait for the reply's first byte, stepping aside for queued measurements. Time spent
        stopped is not the answer's: its deadline moves by as much."""
        held_since = time.monotonic()
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                return  # `receive` reports the timeout
            ready, _, _ = select.select([self._from_child], [], [], min(left, _YIELD_POLL_S))
            if ready:
                return
            if time.monotonic() - held_since >= YIELD_GRACE_S and hold.writer_waiting():
                stopped = time.monotonic()
                self._signal_group(signal.SIGSTOP)
                try:
                    hold.step_aside()
                finally:
                    self._signal_group(signal.SIGCONT)
                    self.deadline += time.monotonic() - stopped
                held_since = time.monotonic()

    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def send(self, msg: dict[str, Any]) -> None:
        if self._idle_since is not None:
            self.deadline += time.monotonic() - self._idle_since
            self._idle_since = None
        try:
            protocol.send(self._to_child, msg)
        except (BrokenPipeError, OSError):
            raise self._death() from None

    def receive(self) -> dict[str, Any]:
        """The next reply; raises `ChildFailed` on timeout, death, flood or a malformed reply. A reply
        whose device entries cannot be opened comes again through the area (`resend`), and this
        process's link is dropped."""
        try:
            stats: dict[str, float] = {}
            try:
                reply = protocol.recv(self._from_child, self.max_message_bytes, self.deadline, stats, self.area,
                                      self.device, self.link)
            except protocol.DeviceTransferFailed as e:
                self.transfer_seconds += stats.get("body_s", 0.0)
                self.deadline += stats.get("device_s", 0.0)  # the parent's work (a first contact's probe), not the answer's
                self.link, self.transfer_note = None, str(e)[:300]
                protocol.send(self._to_child, {"op": "resend"})
                stats = {}
                reply = protocol.recv(self._from_child, self.max_message_bytes, self.deadline, stats, self.area,
                                      self.device)
            self._idle_since = time.monotonic()
            self.transfer_seconds += stats.get("body_s", 0.0)
            # Opening and copying device entries (and a first contact's probe subprocess, up to
            # `_FIRST_CONTACT_TIMEOUT_S`) is the parent's time while the child waits: not the answer's.
            self.deadline += stats.get("device_s", 0.0)
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
        interrupt.untrack(self._tracked)
        if self.proc.poll() is None:
            self.cpu_seconds = process_cpu_seconds(self.proc.pid)
        # Idle: its last request was answered, so it runs nothing of ours (no compiler, no worker).
        idle = self._idle_since is not None and self.proc.poll() is None
        if self.exit_gracefully and self.proc.poll() is None:
            try:
                protocol.send(self._to_child, {"op": "exit"})
                self.proc.wait(timeout=2)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if idle:
            # Whatever runs in its process group once the child itself is gone was started by the answer
            # and would outlive it (confinement forbids leaving the group where seccomp works).
            try:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
            except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
                pass
            self.leftovers += len([p for p in group_members(self.proc.pid) if p != self.proc.pid])
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
        if self.area is not None:
            self.area.close()  # its pages are freed now that the child is gone too
        self._reader.join(timeout=2)
        if self.owns_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


# A request holds its GPU share this long before it steps aside for a queued measurement: a
# trial's own GPU work takes milliseconds; what runs longer is a first call's JIT compile, a
# slow or hanging answer, and a measurement should not wait on those.
YIELD_GRACE_S = 0.3
_YIELD_POLL_S = 0.1
# Output area capacity: address space only; pages exist once written. CPU children have an
# address-space limit (JudgeConfig.cpu_memory_gb), so theirs is smaller; larger replies use the pipe.
_AREA_BYTES_GPU = 16 << 30
_AREA_BYTES_CPU = 1 << 30
_STARTUP_LOG_BYTES = 1 << 20  # a warm child's limits before `assign`: it runs only trusted start-up code
_STARTUP_MESSAGE_BYTES = 1 << 16


class Yieldable(Protocol):
    """A held share of a GPU that can let a queued measurement through (`timing.GpuHold`)."""

    def writer_waiting(self) -> bool: ...

    def step_aside(self) -> None: ...


class CandidateSource(Protocol):
    """Where `CandidateProcess.start` looks first for a device (a `WarmPool`)."""

    def take(self, deadline: float, max_log_bytes: int, max_message_bytes: int,
             cpu_memory_bytes: int) -> CandidateProcess | None:
        """A ready process, already `assign`ed these limits and never handed out before; or None."""


_SOURCES: dict[str, CandidateSource] = {}
_SOURCES_LOCK = threading.Lock()


def register_source(device: str, source: CandidateSource) -> None:
    """Serve this process's evaluations on `device` from `source` (replaces any earlier one)."""
    with _SOURCES_LOCK:
        _SOURCES[_device_key(device)] = source


def has_source(device: str) -> bool:
    """Whether this process serves `device`'s evaluations from a registered source (a warm pool)."""
    with _SOURCES_LOCK:
        return _device_key(device) in _SOURCES


def unregister_source(device: str, source: CandidateSource) -> None:
    """Back to fresh spawns on `device`, unless another source has been registered since."""
    with _SOURCES_LOCK:
        if _SOURCES.get(_device_key(device)) is source:
            del _SOURCES[_device_key(device)]


def _device_key(device: str) -> str:
    return "cuda:0" if device == "cuda" else device


def group_members(pgid: int) -> list[int]:
    """Live processes (zombies excluded) of process group `pgid`, by /proc/PID/stat."""
    members = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()  # after "(comm)", which may hold spaces
        except (OSError, IndexError):
            continue
        if len(fields) > 2 and fields[0] != b"Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


def kill_marked(marker: str, var: str = MARKER_VAR) -> int:
    """SIGKILL every process whose environment carries `var`=`marker` (by default this evaluation's
    marker); how many there were."""
    needle = f"{var}={marker}".encode()
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
