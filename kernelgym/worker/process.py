"""A worker process: one trusted, long-lived judge per device, and the parent's handle on it.

The worker (`python -m kernelgym.worker.process`, run by `WorkerClient.start`) imports torch and
triton once, hosts an `Evaluator` behind a pool of `jobs` threads and a `WarmPool` of candidate
processes for its device, and talks to its parent over a socket with JSON messages:

    parent -> worker   {"op": "job", "job": Job.to_dict()}      {"op": "stop"}
    worker -> parent   {"op": "ready", "pid", "device", "versions"}
                       {"op": "pool", "pool": WarmPool.stats()}   once, when the warm pool is first full
                       {"op": "outcome", "outcome": JobOutcome fields, "seconds", "pool": WarmPool.stats()}

Candidate processes of a worker inherit its marker (`WORKER_MARKER_VAR`), so when the worker dies
the parent can find and kill whatever it left running (`WorkerClient` does, before it reports).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing import Pipe
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kernelgym.jobs import Job, JobOutcome

log = logging.getLogger(__name__)

WORKER_MARKER_VAR = "KERNELGYM_WORKER"


@dataclass(frozen=True)
class WorkerSpec:
    """What one worker process runs: its device, how many jobs at once, how many warm candidates."""

    device: str = field(default="cpu", metadata={"help": "cpu or cuda:N"})
    jobs: int = field(default=2, metadata={"help": "evaluations in flight at once (threads)"})
    warm_pool_size: int = field(default=2, metadata={"help": "candidate processes kept started; 0: fresh spawns"})
    judge_config: dict[str, Any] = field(default_factory=dict, metadata={"help": "JudgeConfig overrides for every job"})
    fork_server: bool = field(default=True, metadata={"help": "warm candidates forked from a fork server"})

    def __post_init__(self) -> None:
        if self.jobs < 1 or self.warm_pool_size < 0:
            raise ValueError("WorkerSpec needs jobs >= 1 and warm_pool_size >= 0")


class WorkerFailed(RuntimeError):
    """The worker process did not come up (exited, or was not ready in time)."""


class WorkerClient:
    """The parent's side of one worker process. `on_message(msg)` runs on a reader thread for each
    message after `ready`; `on_exit(reason)` runs once when the process is gone, after anything it
    left running has been killed."""

    def __init__(self, spec: WorkerSpec, on_message: Callable[[dict[str, Any]], None],
                 on_exit: Callable[[str], None]) -> None:
        self.spec = spec
        self.marker = secrets.token_hex(12)
        self.scratch_root: Path | None = None  # the warm candidates' scratch dirs; removed when the worker is gone
        self.pid = 0
        self.ready_info: dict[str, Any] = {}
        self._on_message, self._on_exit = on_message, on_exit
        self._conn: Connection | None = None
        self._proc: subprocess.Popen | None = None
        self._send_lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def start(self, timeout_s: float = 300.0) -> None:
        """Spawn the worker and wait for `ready` (torch and triton imported, warm pool filling)."""
        ours, theirs = Pipe(duplex=True)
        self.scratch_root = Path(tempfile.mkdtemp(prefix=f"kernelgym-worker-{self.spec.device.replace(':', '')}-"))
        args = [sys.executable, "-m", "kernelgym.worker.process", "--fd", str(theirs.fileno()),
                "--marker", self.marker, "--scratch", str(self.scratch_root),
                "--spec", json.dumps(dataclasses.asdict(self.spec))]
        # A session of its own: a Ctrl-C meant for the service must not kill workers mid-job;
        # the parent stops them, and they exit by themselves when the parent is gone (EOF).
        self._proc = subprocess.Popen(args, pass_fds=(theirs.fileno(),), start_new_session=True)
        theirs.close()
        self._conn, self.pid = ours, self._proc.pid
        try:
            if not ours.poll(timeout_s):
                raise WorkerFailed(f"worker for {self.spec.device} not ready after {timeout_s:.0f} s")
            msg = json.loads(ours.recv_bytes())
            if msg.get("op") != "ready":
                raise WorkerFailed(f"worker for {self.spec.device} sent {msg.get('op')!r} before ready")
        except (EOFError, OSError, WorkerFailed) as e:
            self.kill()
            self._proc.wait()
            self._cleanup()
            if isinstance(e, WorkerFailed):
                raise
            why = _exit_text(self._proc)
            raise WorkerFailed(f"worker for {self.spec.device} exited during start-up ({why})") from None
        self.ready_info = msg
        self._reader = threading.Thread(target=self._read, name=f"worker-reader-{self.spec.device}", daemon=True)
        self._reader.start()

    def send_job(self, job: Job) -> None:
        """Hand one job to the worker. A dead worker is reported through `on_exit`, not raised here."""
        self._send({"op": "job", "job": job.to_dict()})

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the worker to exit (it kills its candidates), kill it if it does not, wait for `on_exit`."""
        self._send({"op": "stop"})
        if self._proc is not None:
            try:
                self._proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.kill()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout_s)

    def kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode()
        with self._send_lock:
            try:
                if self._conn is not None:
                    self._conn.send_bytes(data)
            except OSError:
                pass  # the reader sees the EOF and reports the death

    def _read(self) -> None:
        assert self._conn is not None and self._proc is not None
        while True:
            try:
                msg = json.loads(self._conn.recv_bytes())
            except (EOFError, OSError):
                break
            try:
                self._on_message(msg)
            except Exception:  # a bug in the handler must not stop the reader: later outcomes would be lost
                log.exception("handling a message from worker %s failed", self.spec.device)
        self.kill()
        self._proc.wait()
        reason = _exit_text(self._proc)
        self._cleanup()
        self._on_exit(reason)

    def _cleanup(self) -> None:
        from kernelgym.judge.sandbox import kill_marked

        # A killed worker never closed its candidates: an answer in an endless loop would run on.
        left = kill_marked(self.marker, WORKER_MARKER_VAR)
        if left:
            log.warning("killed %d process(es) left by worker %s (pid %d)", left, self.spec.device, self.pid)
        if self.scratch_root is not None:
            shutil.rmtree(self.scratch_root, ignore_errors=True)
        with self._send_lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None


def _exit_text(proc: subprocess.Popen) -> str:
    from kernelgym.judge.errors import describe_exit

    return describe_exit(proc.returncode) if proc.returncode is not None else "still running"


# -- the worker side --------------------------------------------------------------------------------

def _use_device(device: str) -> None:
    from kernelgym.judge.cuda_sync import ordinal_of, use_blocking_sync

    ordinal = ordinal_of(device)
    if ordinal is not None:  # before the context exists (`judge.cuda_sync`)
        log.info("worker %s: CUDA synchronisation %s", device, use_blocking_sync(ordinal))
    if device.startswith("cuda:"):
        import torch

        torch.cuda.set_device(device)


def serve(conn: Connection, spec: WorkerSpec, scratch_root: Path) -> None:
    """Run jobs from `conn` until `stop` or EOF, then kill every candidate and exit the process."""
    import torch  # noqa: F401 - imported now so no job pays for it
    import triton  # noqa: F401

    from kernelgym.judge.versions import software_versions
    from kernelgym.worker.evaluator import Evaluator
    from kernelgym.worker.warm_pool import WarmPool

    _use_device(spec.device)
    evaluator = Evaluator(spec.device, spec.judge_config)
    pool = (WarmPool(spec.device, spec.warm_pool_size, scratch_root=scratch_root, fork_server=spec.fork_server)
            if spec.warm_pool_size else None)
    send_lock = threading.Lock()

    def send(msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode()
        with send_lock:
            conn.send_bytes(data)

    def announce_warm() -> None:
        if pool is not None and pool.wait_ready(timeout=600):
            try:
                send({"op": "pool", "pool": pool.stats()})
            except OSError:
                pass

    if pool is not None:
        pool.start()

    def run(job: Job) -> None:
        t0 = time.monotonic()
        try:
            outcome = evaluator.evaluate(job)
        except _Stopping:
            return  # the parent has already reported this job
        except Exception as e:  # our bug, not the answer's: say so instead of losing the job
            log.exception("evaluating job %s failed", job.id)
            outcome = JobOutcome(job.id, system_error=f"worker error: {type(e).__name__}: {e}", worker=evaluator.name)
        try:
            send({"op": "outcome", "outcome": dataclasses.asdict(outcome), "seconds": round(time.monotonic() - t0, 4),
                  "pool": pool.stats() if pool is not None else None})
        except OSError:
            pass  # the parent is gone; the main loop sees the EOF too

    # CUDA's current device is per thread and a new thread starts on GPU 0: the set_device above holds for this
    # thread only, so each job thread sets it too (kernelgym/judge/timing.py: timing on GPU 0's idle stream)
    executor = ThreadPoolExecutor(spec.jobs, thread_name_prefix=f"judge-{spec.device}",
                                  initializer=_use_device, initargs=(spec.device,))
    running: set[Future] = set()
    send({"op": "ready", "pid": os.getpid(), "device": spec.device, "versions": software_versions()})
    threading.Thread(target=announce_warm, name="announce-warm", daemon=True).start()
    while True:
        try:
            msg = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            break
        if msg.get("op") == "job":
            future = executor.submit(run, Job.from_dict(msg["job"]))
            running.add(future)
            future.add_done_callback(running.discard)
        elif msg.get("op") == "stop":
            break
    _exit_worker(spec.device, pool, list(running))


class _Stopping(RuntimeError):
    """Raised to judge threads that ask for a candidate process while the worker exits."""


class _NoMoreCandidates:
    """Registered as the device's candidate source while the worker exits: a judge thread whose
    candidate was just killed would otherwise start another (an `oom` is judged again)."""

    def take(self, *args: Any) -> None:
        raise _Stopping("the worker is shutting down")


def _exit_worker(device: str, pool: Any, running: list[Future]) -> None:
    """Kill every candidate of this worker, let the judge threads unwind briefly, exit."""
    from kernelgym.judge.sandbox import kill_marked, register_source

    if pool is not None:
        pool.close()
    register_source(device, _NoMoreCandidates())
    # With their candidates dead, judge threads finish within moments and remove their scratch
    # dirs; one still busy (a reference being timed) is not worth waiting for. The scan repeats:
    # a candidate between fork and exec does not carry the marker yet.
    give_up = time.monotonic() + 3
    while True:
        kill_marked(os.environ[WORKER_MARKER_VAR], WORKER_MARKER_VAR)
        if not wait(running, timeout=0.25).not_done or time.monotonic() > give_up:
            break
    os._exit(0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="KernelGym worker process (started by WorkerClient)")
    parser.add_argument("--fd", type=int, required=True, help="socket to the parent")
    parser.add_argument("--marker", required=True, help="inherited by every candidate process, to find leftovers")
    parser.add_argument("--scratch", required=True, help="where warm candidates' scratch dirs go")
    parser.add_argument("--spec", required=True, help="WorkerSpec as JSON")
    args = parser.parse_args(argv)
    # Set here rather than by the parent: the worker's own initial environment then lacks it, so
    # killing the marked processes never kills the worker itself.
    os.environ[WORKER_MARKER_VAR] = args.marker
    logging.basicConfig(level=logging.WARNING, format="[worker %(process)d] %(levelname)s %(name)s: %(message)s")
    serve(Connection(args.fd), WorkerSpec(**json.loads(args.spec)), Path(args.scratch))


if __name__ == "__main__":
    main()
