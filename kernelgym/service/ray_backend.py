"""`RayBackend`: the service's jobs judged by Ray actors, one per GPU of a cluster of any size.

Each actor holds one warm `Evaluator` and a `WarmPool` of started candidate processes (`warm`,
default `jobs`; forked from a fork server of the actor's own) and judges up to `jobs` candidates at
once (a threaded actor), like a local worker does. The backend keeps its own queue and hands a job
to the least-loaded ready actor only when that actor has a free slot, so a queued job can still be
cancelled and an actor that is starting (or cannot be placed) never holds jobs. One thread
`ray.wait`s on every outstanding reference and delivers each job's outcome exactly once; when an
actor dies, every job in flight on it gets a retryable `system_error` and the actor is replaced.

Ray is optional (`pip install "kernelgym[ray]"`) and is imported only when a backend starts.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import threading
import time
import uuid
from collections import deque
from typing import Any

from kernelgym.jobs import Job, JobOutcome, OutcomeCallback
from kernelgym.service.backend import deliver_outcomes, drain_lost, remove_queued

log = logging.getLogger(__name__)

NAMESPACE = "kernelgym"  # actors are named kernelgym-<backend>-w<slot>-g<generation> in it (`ray list actors`)
FORWARDED_ENV = ("TRITON_INTERPRET", "KERNELGYM_DATA_DIR")  # the judge reads these; actors on other nodes lack them
MAX_START_FAILURES = 3  # an actor that dies this many times in a row before it is ready is not started again
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_POLL_S = 0.1  # ray.wait timeout: how late a reference submitted meanwhile starts being watched


def import_ray() -> Any:
    """The `ray` module, or an ImportError that says how to install it."""
    try:
        import ray
    except ImportError as e:
        raise ImportError('the Ray backend needs Ray: pip install "kernelgym[ray]"') from e
    return ray


class EvaluatorActor:
    """The body of one Ray actor: an `Evaluator` kept warm for the actor's lifetime.

    On a GPU actor Ray has set CUDA_VISIBLE_DEVICES to its one GPU, so device "cuda" is that GPU.
    Jobs and outcomes cross as plain dicts so driver and actors only share the JSON-able shape."""

    def __init__(self, device: str, base_config: dict[str, Any], label: str, warm: int = 0,
                 fork_server: bool = True) -> None:
        import ray
        import torch

        from kernelgym.judge.versions import software_versions
        from kernelgym.worker.evaluator import Evaluator
        from kernelgym.worker.warm_pool import WarmPool

        gpus = [str(g) for g in ray.get_gpu_ids()]
        ip = ray.util.get_node_ip_address()
        name = f"{ip}/gpu{','.join(gpus)}" if gpus else f"{ip}/{label}"
        self._evaluator = Evaluator(device, base_config, name=name)
        gpu_model = ""
        if device.startswith("cuda"):
            torch.empty(0, device=device)  # create the CUDA context now, not inside the first job's deadline
            gpu_model = torch.cuda.get_device_name(device)
        # Filled in the background: the actor is ready (and judges, with fresh processes while the
        # pool is short) before its pool is full. A killed actor takes its child processes (the fork
        # server) with it, and forked candidates die with their server (PR_SET_PDEATHSIG).
        self._pool = WarmPool(device, warm, fork_server=fork_server) if warm > 0 else None
        if self._pool is not None:
            self._pool.start()
        # gpu_model and versions name where verdicts come from: the service puts them in its cache key.
        self._info = {"worker": name, "node": ray.get_runtime_context().get_node_id(), "ip": ip,
                      "device": f"cuda:{','.join(gpus)}" if gpus else label,  # unique on its node, for metrics
                      "pid": os.getpid(), "gpus": gpus, "gpu_model": gpu_model, "versions": software_versions()}

    def describe(self) -> dict[str, Any]:
        """Where the actor runs; returning at all means the Evaluator is built (the actor is ready)."""
        return self._info

    def evaluate(self, job: dict[str, Any]) -> dict[str, Any]:
        return dataclasses.asdict(self._evaluator.evaluate(Job.from_dict(job)))

    def wait_warm(self, timeout_s: float) -> dict[str, Any] | None:
        """The warm pool's stats once it is full or `timeout_s` has passed; None without a pool."""
        if self._pool is None:
            return None
        self._pool.wait_ready(timeout=timeout_s)
        return self._pool.stats()

    def watch(self) -> None:
        """Never returns: its reference fails exactly when the actor dies, also while it is idle."""
        threading.Event().wait()


@dataclasses.dataclass
class _Running:
    job: Job
    on_done: OutcomeCallback
    since: float


@dataclasses.dataclass
class _Slot:
    """One actor position; the actor in it is replaced when it dies (`generation` counts them)."""

    index: int
    device: str
    node: str | None = None  # CPU actors are pinned (softly) to one node each
    actor: Any = None
    generation: int = 0
    name: str = ""
    ready: bool = False
    disabled: str = ""  # why this slot gave up restarting its actor
    start_failures: int = 0
    restarts: int = 0
    pool: dict[str, Any] | None = None  # its warm pool's stats, as of the last `wait_warm`
    done: int = 0
    busy_s: float = 0.0
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    running: dict[str, _Running] = dataclasses.field(default_factory=dict)


class RayBackend:
    """The `Backend` protocol on a Ray cluster.

    `address`: "auto" joins the running cluster (`ray start --head` on this node or RAY_ADDRESS),
    "local" starts a private one on this machine, anything else is a cluster address; a Ray that the
    caller already initialised is used as is (and left running by `shutdown`). `devices`: "auto" is one
    GPU actor per GPU in the cluster, or one CPU actor per node when it has none; "gpu" requires GPUs;
    "cpu" is one CPU actor per node; an integer N is N CPU actors. `jobs`: candidates per actor at once.
    `warm`: candidate processes each actor keeps started (None: `jobs`; 0: a fresh process per
    candidate); `fork_server`: fork them from a fork server (False: each a new interpreter).
    `init_kwargs` go to `ray.init` when it starts a cluster (e.g. num_cpus in tests)."""

    def __init__(self, address: str | None = "auto", devices: str | int = "auto", jobs: int = 4,
                 base_config: dict[str, Any] | None = None, init_kwargs: dict[str, Any] | None = None,
                 env_vars: dict[str, str] | None = None, start_timeout: float = 300.0, warm: int | None = None,
                 fork_server: bool = True) -> None:
        if jobs < 1:
            raise ValueError(f"jobs must be at least 1, got {jobs}")
        if warm is not None and warm < 0:
            raise ValueError(f"warm must be 0 or more, got {warm}")
        self.address = address
        self.devices = devices
        self.jobs = jobs
        self.warm = 2 * jobs if warm is None else warm  # two processes per evaluation (answer, replay)
        self.fork_server = fork_server
        self.base_config = dict(base_config or {})
        self.init_kwargs = dict(init_kwargs or {})
        # Actors on other nodes do not inherit this process's environment: forward what the judge reads.
        self.env_vars = {k: os.environ[k] for k in FORWARDED_ENV if k in os.environ} | dict(env_vars or {})
        self.start_timeout = start_timeout
        self._uid = uuid.uuid4().hex[:8]
        self._ray: Any = None
        self._actor_class: Any = None  # ray.remote(EvaluatorActor), made once Ray is imported
        self._owns_ray = False
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._slots: list[_Slot] = []
        self._queue: deque[tuple[Job, OutcomeCallback]] = deque()
        self._refs: dict[Any, tuple[str, _Slot, int, str | None]] = {}  # ref -> (kind, slot, generation, job id)
        self._waiter: threading.Thread | None = None
        self._started = False
        self._stopping = False

    # -- Backend protocol ------------------------------------------------------------------------

    def start(self) -> None:
        """Connect to (or start) Ray, create the actors and wait until they are ready or
        `start_timeout` passes. Raises RuntimeError when no actor can start at all."""
        ray = import_ray()  # before anything else: a missing Ray leaves the backend unstarted
        with self._lock:
            if self._started:
                return
            self._started = True
        self._ray = ray
        self._actor_class = ray.remote(EvaluatorActor)
        try:
            if not ray.is_initialized():
                kwargs = dict(self.init_kwargs)
                if self.address in ("local", None):
                    kwargs.setdefault("include_dashboard", False)  # the dashboard costs memory nobody asked for
                ray.init(address=self.address, **kwargs)
                self._owns_ray = True
            self._start_actors()
        except BaseException:
            self.shutdown()  # no half-started backend: kill what started, release a Ray we started
            raise

    def capacity(self) -> int:
        """Actors x jobs per actor, counting actors that are still starting."""
        with self._lock:
            return len(self._slots) * self.jobs

    def submit(self, job: Job, on_done: OutcomeCallback) -> None:
        """Queue `job`; it runs on the least-loaded ready actor as soon as one has a free slot."""
        refused: JobOutcome | None = None
        with self._lock:
            if not self._started:
                raise RuntimeError("RayBackend.submit before start()")
            if self._stopping:
                refused = JobOutcome(job_id=job.id, system_error="the Ray backend is shut down", retryable=True)
            elif self._slots and all(s.disabled for s in self._slots):
                refused = JobOutcome(job_id=job.id, system_error=f"no Ray actor can start: {self._slots[0].disabled}")
            else:
                self._queue.append((job, on_done))
                self._dispatch()
        if refused is not None:
            deliver_outcomes([(on_done, refused)])

    def wait_warm(self, timeout_s: float = 300.0) -> bool:
        """Wait until every ready actor's warm pool is full (at once without pools); False on
        timeout or when an actor dies meanwhile. The pools' stats then show in `stats()`."""
        if not self.warm:
            return True
        with self._lock:
            slots = [s for s in self._slots if s.ready and s.actor is not None]
            refs = [(s, s.generation, s.actor.wait_warm.remote(timeout_s)) for s in slots]
        full = True
        for slot, generation, ref in refs:
            try:
                pool = self._ray.get(ref, timeout=timeout_s + 30)
            except Exception:  # the actor died or Ray timed out: not warm; its death is handled elsewhere
                log.debug("wait_warm on %s failed", slot.name, exc_info=True)
                full = False
                continue
            with self._lock:
                if slot.generation == generation:
                    slot.pool = pool
            full = full and pool is not None and pool.get("ready", 0) >= pool.get("size", 0)
        return full

    def cancel(self, job_id: str) -> bool:
        """Drops a job still in this backend's queue; one already sent to an actor runs to the end."""
        with self._lock:
            return remove_queued(self._queue, job_id)

    def stats(self) -> dict[str, Any]:
        """Actors (ready, restarts, in flight, done, busy seconds each), the queue, alive nodes, and
        where verdicts come from: the actors' GPU models and software versions (not this process's)."""
        with self._lock:
            workers = [{"name": s.info.get("worker", s.name), "actor": s.name, "device": s.info.get("device", s.device),
                        "node": s.info.get("ip", ""), "alive": s.ready, "disabled": s.disabled,
                        "in_flight": len(s.running), "done": s.done, "busy_s": round(s.busy_s, 3),
                        "restarts": s.restarts, "pool": s.pool} for s in self._slots]
            infos = [s.info for s in self._slots if s.ready]
            queued = len(self._queue)
        return {"backend": "ray", "actors": len(workers), "actors_alive": len(infos),
                "restarts": sum(w["restarts"] for w in workers), "capacity": len(workers) * self.jobs,
                "in_flight": sum(w["in_flight"] for w in workers), "queued": queued,
                "nodes": self._alive_nodes(), "namespace": NAMESPACE, "workers": workers,
                "gpu_model": " | ".join(sorted({i["gpu_model"] for i in infos if i["gpu_model"]})),
                "versions": infos[0]["versions"] if infos else None}

    def shutdown(self) -> None:
        """Kill the actors; queued and in-flight jobs get a retryable outcome. Idempotent."""
        with self._lock:
            if not self._started or self._stopping:
                return
            self._stopping = True
            lost = drain_lost(self._queue, self._slots)
            for slot in self._slots:
                slot.ready = False
            self._refs.clear()
            actors = [s.actor for s in self._slots if s.actor is not None]
            self._changed.notify_all()
        deliver_outcomes([(cb, JobOutcome(job_id=job.id, system_error="the Ray backend shut down", retryable=True))
                  for cb, job in lost])
        if self._waiter is not None:
            self._waiter.join(timeout=5)
        for actor in actors:
            self._kill(actor)
        if self._owns_ray:
            self._ray.shutdown()

    # -- actors ----------------------------------------------------------------------------------

    def _start_actors(self) -> None:
        """Create one actor per planned device and wait (bounded) until they are ready."""
        with self._lock:
            self._slots = [_Slot(index=i, device=dev, node=node) for i, (dev, node) in enumerate(self._plan())]
            for slot in self._slots:
                self._spawn(slot)
        self._waiter = threading.Thread(target=self._wait_loop, name="ray-backend-waiter", daemon=True)
        self._waiter.start()
        log.info("Ray backend: %d %s actor(s) x %d jobs on %d node(s)", len(self._slots),
                 self._slots[0].device, self.jobs, self._alive_nodes())
        deadline = time.monotonic() + self.start_timeout
        with self._changed:
            self._changed.wait_for(lambda: all(s.ready or s.disabled for s in self._slots),
                                   timeout=max(0.0, deadline - time.monotonic()))
            pending = [s.name for s in self._slots if not (s.ready or s.disabled)]
            if all(s.disabled for s in self._slots):
                raise RuntimeError(f"no Ray actor could start: {self._slots[0].disabled}")
        if pending:
            log.warning("Ray backend: %d actor(s) not ready after %.0f s (waiting for resources?): %s",
                        len(pending), self.start_timeout, ", ".join(pending))

    def _plan(self) -> list[tuple[str, str | None]]:
        """(device, node to prefer) per actor, from `devices` and what the cluster holds."""
        ray, devices = self._ray, self.devices
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if isinstance(devices, int) or (isinstance(devices, str) and devices.isdigit()):
            if int(devices) < 1:
                raise ValueError(f"devices: need at least one actor, got {devices}")
            return [("cpu", None)] * int(devices)
        if devices == "gpu" and gpus == 0:
            raise ValueError("devices='gpu' but the Ray cluster has no GPUs (did `ray start` see them?)")
        if devices in ("auto", "gpu") and gpus > 0:
            return [("cuda", None)] * gpus
        if devices in ("auto", "cpu"):
            return [("cpu", n["NodeID"]) for n in ray.nodes() if n.get("Alive")]
        raise ValueError(f"devices must be 'auto', 'gpu', 'cpu' or a number of CPU actors, got {devices!r}")

    def _spawn(self, slot: _Slot) -> None:
        """Start a fresh actor in `slot` and watch its readiness and its death. Under the lock."""
        slot.generation += 1
        slot.name = f"kernelgym-{self._uid}-w{slot.index}-g{slot.generation}"
        slot.ready = False
        slot.info, slot.pool = {}, None
        options: dict[str, Any] = {
            "name": slot.name, "namespace": NAMESPACE,
            "max_restarts": 0,  # we replace a dead actor ourselves, so restarts are counted and jobs failed once
            "max_concurrency": self.jobs + 2,  # + the thread `watch` keeps for the actor's lifetime, + `wait_warm`
        }
        if self.env_vars:
            options["runtime_env"] = {"env_vars": self.env_vars}
        if slot.device == "cpu":
            options["num_cpus"] = 1
            if slot.node is not None:
                from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(slot.node, soft=True)
        else:
            options["num_gpus"] = 1
        actor = self._actor_class.options(**options).remote(slot.device, self.base_config, f"cpu{slot.index}",
                                                            self.warm, self.fork_server)
        slot.actor = actor
        self._refs[actor.describe.remote()] = ("ready", slot, slot.generation, None)
        self._refs[actor.watch.remote()] = ("watch", slot, slot.generation, None)

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:  # already dead, or Ray is going down: either way it is gone
            log.debug("ray.kill failed", exc_info=True)

    def _dispatch(self) -> None:
        """Send queued jobs to the least-loaded ready actors that have a free slot. Under the lock."""
        while self._queue:
            free = [s for s in self._slots if s.ready and len(s.running) < self.jobs]
            if not free:
                return
            slot = min(free, key=lambda s: (len(s.running), s.index))
            job, on_done = self._queue.popleft()
            ref = slot.actor.evaluate.remote(job.to_dict())
            self._refs[ref] = ("job", slot, slot.generation, job.id)
            slot.running[job.id] = _Running(job, on_done, time.monotonic())

    def _lose_actor(self, slot: _Slot, generation: int, why: str) -> list[tuple[OutcomeCallback, JobOutcome]]:
        """The actor of `slot` (that generation) is gone: fail its jobs as retryable and replace it,
        unless it keeps dying before it is ready. Under the lock; returns outcomes to deliver."""
        if self._stopping or slot.generation != generation:
            return []  # already handled: another of its references reported the same death first
        log.warning("Ray backend: actor %s lost (%d job(s) in flight): %s", slot.name, len(slot.running), why)
        outcomes = [(r.on_done, JobOutcome(job_id=r.job.id, system_error=f"Ray actor {slot.name} died: {why}",
                                           retryable=True, worker=slot.info.get("worker", slot.name)))
                    for r in slot.running.values()]
        slot.running.clear()
        self._refs = {ref: e for ref, e in self._refs.items() if e[1] is not slot}
        self._kill(slot.actor)
        slot.start_failures = 0 if slot.ready else slot.start_failures + 1
        if slot.start_failures >= MAX_START_FAILURES:
            slot.ready, slot.actor, slot.disabled = False, None, why
            log.error("Ray backend: %s failed to start %d times; giving up on it", slot.name, slot.start_failures)
            if all(s.disabled for s in self._slots):
                outcomes += [(cb, JobOutcome(job_id=job.id, system_error=f"no Ray actor can start: {why}"))
                             for job, cb in self._queue]
                self._queue.clear()
        else:
            slot.restarts += 1
            self._spawn(slot)
        self._changed.notify_all()
        return outcomes

    # -- the waiter thread -----------------------------------------------------------------------

    def _wait_loop(self) -> None:
        ray = self._ray
        while True:
            with self._lock:
                if self._stopping:
                    return
                refs = list(self._refs)
            if not refs:
                time.sleep(_POLL_S)
                continue
            try:
                ready, _ = ray.wait(refs, num_returns=1, timeout=_POLL_S)
            except Exception:  # Ray itself failing (driver disconnect): keep trying until shutdown
                log.exception("ray.wait failed")
                time.sleep(1.0)
                continue
            for ref in ready:
                deliver_outcomes(self._settle(ref))

    def _settle(self, ref: Any) -> list[tuple[OutcomeCallback, JobOutcome]]:
        """Handle one finished reference; returns the outcomes it completes."""
        ray = self._ray
        with self._lock:
            entry = self._refs.pop(ref, None)
        if entry is None:
            return []  # its actor was already declared lost, or we are shutting down
        kind, slot, generation, job_id = entry
        error: Exception | None = None
        try:
            value = ray.get(ref)
        except ray.exceptions.RayTaskError as e:  # the method raised: our bug or the node's trouble, not a death
            error = e.cause if isinstance(e.cause, Exception) else e  # the evaluator's own exception
        except ray.exceptions.RayError as e:  # the actor died, its worker crashed or was OOM-killed, its node was lost
            with self._lock:
                return self._lose_actor(slot, generation, f"{type(e).__name__}: {_summary(e)}")
        with self._lock:
            if self._stopping or slot.generation != generation:
                return []
            if kind == "ready":
                if error is not None:  # describe() cannot raise; treat anything odd as a failed start
                    return self._lose_actor(slot, generation, f"describe failed: {_summary(error)}")
                slot.ready, slot.info, slot.start_failures = True, value, 0
                log.info("Ray backend: %s ready on %s", slot.name, value.get("worker"))
                if any(s.ready and s.info["versions"] != value["versions"] for s in self._slots):
                    log.warning("Ray backend: %s runs %s, unlike other actors: verdicts may differ by node",
                                value.get("worker"), value["versions"])
                self._changed.notify_all()
                self._dispatch()
                return []
            if kind == "watch":
                return self._lose_actor(slot, generation, "watch returned")
            running = slot.running.pop(job_id, None)
            if running is None:
                return []
            slot.done += 1
            slot.busy_s += time.monotonic() - running.since
            self._dispatch()
        if error is not None:
            # Retryable: the service's retry limit bounds the cost, and another actor (another node's
            # disk, memory) may well succeed where this one raised.
            log.error("Ray backend: job %s raised on %s: %s", job_id, slot.name, error)
            why = f"evaluator raised on {slot.name}: {type(error).__name__}: {_summary(error)}"
            outcome = JobOutcome(job_id=job_id, system_error=why, retryable=True,
                                 worker=slot.info.get("worker", slot.name))
        else:
            outcome = JobOutcome(**value)
        return [(running.on_done, outcome)]

    def _alive_nodes(self) -> int:
        try:
            return sum(1 for n in self._ray.nodes() if n.get("Alive"))
        except Exception:  # stats must not fail because the GCS is briefly unreachable
            return 0


def _summary(e: BaseException) -> str:
    """One line for a system_error: Ray's messages carry colour codes, and a traceback's last line
    (e.g. the exception an actor's constructor raised) says more than its first."""
    lines = [line.strip() for line in _ANSI.sub("", str(e)).splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    if any(line.startswith('File "') for line in lines):
        return f"{lines[0].split(',')[0]}: {lines[-1]}"[:500]
    return lines[0][:500]

