"""Serve `KernelEnv` to RL frameworks over OpenEnv's WebSocket protocol (`kernelgym env serve`).

The app is OpenEnv's own (`openenv.core.create_app`), so every OpenEnv client, TRL's and
verifiers' included, speaks to it unchanged. Each WebSocket connection to `/ws` is one session
with its own `KernelEnv`; the server runs in OpenEnv's production mode, which drops the stateless
HTTP `/reset` and `/step` routes (a fresh env per request is meaningless for a multi-turn
episode) and keeps `/ws`, `/health`, `/schema`, `/metadata` and the task routes. `GET /sessions`
is ours: live sessions and judge calls in flight, so a leak is visible from outside.

Remote clients choose tasks only by id from the set resolved when the server starts: a task spec
names files whose reference code the judge runs, so it is never taken from the wire.

Errors reach the client as OpenEnv error frames with a one-line message (OpenEnv sends `str(e)`,
never a traceback); unexpected failures are logged here with their traceback and reported as an
internal error. A client that drops mid-step loses its session at once; an answer of its still
waiting for a judge slot is never judged, one already being judged finishes in the background
(bounded by `JudgeConfig.timeout_s`: the judge has no cancel hook).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import ipaddress
import json
import logging
import os
import random
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from openenv.core import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from kernelgym import __version__
from kernelgym.env.environment import EnvConfig, EnvError, JudgeFn, KernelEnv
from kernelgym.env.openenv_types import KernelGymAction, KernelGymObservation, KernelGymState
from kernelgym.env.prompts import load_templates
from kernelgym.judge.config import JudgeConfig
from kernelgym.judge.result import EvalResult
from kernelgym.tasks.task import Task, TaskError
from rewards.config import RewardConfig

if TYPE_CHECKING:
    from fastapi import FastAPI

logger = logging.getLogger(__name__)

ENV_NAME = "kernelgym"
SPLIT = "train"  # the one split of the TaskProvider routes: the tasks the server was started with
DEFAULT_PORT = 8001  # `kernelgym serve` (the judging service) takes 8000
DEFAULT_MAX_SESSIONS = 64
# Largest WebSocket frame the server reads (uvicorn's default, stated here so it is a decision). An
# answer over JudgeConfig.max_answer_bytes but under this is judged `invalid_answer` like in process;
# a frame over it makes uvicorn close the connection with code 1009 (message too big).
WS_MAX_BYTES = 16 << 20
TOKEN_ENV = "KERNELGYM_TOKEN"  # the judging service's variable: one token for both servers
# A session that owes its client no reply for this long is closed (its slot freed). OpenEnv's client
# reconnects on its next call, so a pooled client (TRL) only loses an episode it had left unfinished.
DEFAULT_IDLE_TIMEOUT_S = 600.0
_SLOT_POLL_S = 0.25  # how often a step waiting for a judge slot checks that its client is still there
# What an observation carries (reset's `view`): everything, or only the messages, for clients that show
# the model the whole observation (verifiers' OpenEnv taskset sends its JSON as the next user turn).
VIEWS = ("full", "chat")
# The user turn of a step answered before its answer was judged (reset's `reply_within_s`). It asks for
# a non-empty reply because verifiers ends an episode on an empty one.
PENDING_TEXT = ("Your answer is still waiting for the judge (the server is busy), so there is no feedback yet. "
                "Reply with the single word `wait` to receive its result; that reply is not judged.")


BINARY_FRAME_TEXT = ("binary WebSocket frame: send each message as a text frame holding its JSON, "
                     'e.g. {"type": "reset", "data": {"task": "relu"}}')


class ClientLeft(RuntimeError):
    """The session's client closed its connection; its pending answer is not judged."""


_CLIENT_ERRORS = (EnvError, TaskError, ValueError, IndexError, ClientLeft)


class ServerContext:
    """What every session shares: configs, the task set, the judge with its concurrency limit, and
    counts of live sessions and judge calls in flight (thread-safe: sessions run in their own threads)."""

    def __init__(self, tasks: list[Task], judge_config: JudgeConfig, reward_config: RewardConfig,
                 env_config: EnvConfig, jobs: int, max_sessions: int, judge_fn: JudgeFn | None = None) -> None:
        if not tasks:
            raise ValueError("the server needs at least one task")
        if jobs < 1 or max_sessions < 1:
            raise ValueError("jobs and max_sessions must be >= 1")
        self.tasks = tasks
        self._by_id = {t.task_id: t for t in tasks}
        if len(self._by_id) != len(tasks):
            raise ValueError("the task set has duplicate task ids")
        self.judge_config, self.reward_config, self.env_config = judge_config, reward_config, env_config
        self.templates = load_templates()
        self.jobs, self.max_sessions = jobs, max_sessions
        self._judge_fn = judge_fn
        self._gate = None  # judge.batch.SharedGate, made on first use so a stub judge never imports torch
        self._slots = threading.BoundedSemaphore(jobs)
        self._lock = threading.Lock()
        self.live_sessions = 0
        self.judging = 0

    def judge(self, task: Task, answer: str, config: JudgeConfig, gone: threading.Event | None = None) -> EvalResult:
        """One evaluation, at most `jobs` at a time across all sessions (the rest wait here). A wait is
        abandoned once `gone` is set: after a trainer crash, its queued answers would otherwise keep every
        judge busy for nobody. An evaluation already running finishes (the judge has no cancel hook)."""
        while not self._slots.acquire(timeout=_SLOT_POLL_S):
            _raise_if_gone(gone)
        with self._lock:
            self.judging += 1
        try:
            _raise_if_gone(gone)
            if self._judge_fn is not None:
                return self._judge_fn(task, answer, config)
            from kernelgym.judge.batch import SharedGate, judge_one

            with self._lock:
                self._gate = self._gate or SharedGate()
            # judge_one: the step every batch runner shares (an `oom` is judged again with the device to itself).
            return judge_one(task, answer, config, self._gate)
        finally:
            with self._lock:
                self.judging -= 1
            self._slots.release()

    def pick(self, task: str | None, index: int | None, seed: int | None) -> Task:
        """The task an episode runs: by id, by index, else drawn at random (reproducibly with `seed`)."""
        if task is not None and index is not None:
            raise ValueError("reset takes task or index, not both")
        if task is not None:
            if task not in self._by_id:
                shown = ", ".join(sorted(self._by_id)[:8]) + (", ..." if len(self._by_id) > 8 else "")
                raise ValueError(f"unknown task {task!r}: this server serves {len(self.tasks)} task(s): {shown} "
                                 f"(all of them: POST /{ENV_NAME}/tasks with {{\"split\": \"{SPLIT}\"}})")
            return self._by_id[task]
        if index is not None:
            if not 0 <= index < len(self.tasks):
                raise ValueError(f"task index {index} is out of range: this server serves {len(self.tasks)} task(s)")
            return self.tasks[index]
        return random.Random(seed).choice(self.tasks)

    def describe(self, index: int) -> dict[str, Any]:
        t = self.tasks[index]
        return {"index": index, "task": t.task_id, "level": t.level}

    def session_opened(self) -> None:
        with self._lock:
            self.live_sessions += 1

    def session_closed(self) -> None:
        with self._lock:
            self.live_sessions -= 1

    def status(self) -> dict[str, int]:
        with self._lock:
            return {"active_sessions": self.live_sessions, "max_sessions": self.max_sessions,
                    "judging": self.judging, "judge_slots": self.jobs, "tasks": len(self.tasks)}


def _raise_if_gone(gone: threading.Event | None) -> None:
    if gone is not None and gone.is_set():
        raise ClientLeft("the client left before its answer was judged")


class _Presence:
    """Whether the client of one WebSocket connection is still there: set by the middleware when the
    connection closes, read by its session (a threading.Event for the judging thread, an asyncio.Event
    for the event loop)."""

    def __init__(self) -> None:
        self.gone = threading.Event()
        self._gone_async = asyncio.Event()

    def mark_gone(self) -> None:
        self.gone.set()
        self._gone_async.set()

    async def wait_gone(self) -> None:
        await self._gone_async.wait()


_PRESENCE: contextvars.ContextVar[_Presence | None] = contextvars.ContextVar("kernelgym_presence", default=None)


class _Quiet:
    """How long a connection has gone without an unanswered request (the event loop's clock).

    A session is idle only while it owes its client nothing: a step being judged, however long,
    is not idleness."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._unanswered = 0
        self._since = self._loop.time()
        self._changed = asyncio.Event()

    def request(self) -> None:
        self._unanswered += 1
        self._changed.set()

    def answered(self) -> None:
        self._unanswered = max(0, self._unanswered - 1)
        if not self._unanswered:
            self._since = self._loop.time()
        self._changed.set()

    async def outlast(self, idle_s: float) -> None:
        """Return once the connection has owed nothing for `idle_s` seconds in a row."""
        while True:
            self._changed.clear()
            left = None if self._unanswered else self._since + idle_s - self._loop.time()
            if left is not None and left <= 0:
                return
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)


class _SessionGate:
    """ASGI wrapper of WebSocket connections, the only route that runs submitted code.

    With a token, a connection without `Authorization: Bearer <token>` is refused (HTTP 403); without
    one and with `local_only`, so is a connection from another host. OpenEnv
    reads a client's frames only between steps, so a client that leaves mid-step would go unnoticed
    until the judge returns; this reads them as they arrive and tells the session through `_PRESENCE`
    (the handler runs in the same task, so it sees the context variable). It also turns the
    handler's failure to answer a departed client into one log line instead of an ASGI traceback.

    Two of OpenEnv's answers are made whole here. A binary frame gets an `INVALID_JSON` error frame
    saying so, and the session lives on (OpenEnv's handler reads text only: it answered
    `SESSION_ERROR: 'text'` and dropped the session). A connection refused over capacity is closed only
    once its client has spoken (or after `_REFUSAL_GRACE_S`), with code 1013 and the refusal as the
    close reason: closing at once made a client that sends its first frame straight after connecting
    fail on that send and never read the `CAPACITY_REACHED` frame waiting for it."""

    _READ_AHEAD = 64  # frames buffered; the protocol is one request at a time, so this only bounds a flood
    _REFUSAL_GRACE_S = 5.0

    def __init__(self, app: Any, token: str | None = None, idle_timeout_s: float | None = None,
                 local_only: bool = False) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode() if token else None
        self._idle_timeout_s = idle_timeout_s
        self._local_only = local_only

    def _authorized(self, scope: dict[str, Any]) -> bool:
        if self._expected is None:
            return not self._local_only or _is_loopback((scope.get("client") or ("", 0))[0])
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        return secrets.compare_digest(given, self._expected)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        if not self._authorized(scope):
            await receive()  # the websocket.connect message; closing before accepting answers HTTP 403
            await send({"type": "websocket.close", "code": 1008})
            return
        from starlette.websockets import WebSocketDisconnect, WebSocketDisconnected

        presence = _Presence()
        frames: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self._READ_AHEAD)
        quiet = _Quiet()
        spoke = asyncio.Event()  # the client sent a frame or left
        refusal: list[str] = []  # the CAPACITY_REACHED message sent to a refused client

        async def read() -> None:
            while True:
                message = await receive()
                if message["type"] != "websocket.connect":
                    spoke.set()
                if message["type"] == "websocket.receive":
                    quiet.request()
                    if message.get("text") is None:
                        await reply(_error_frame(BINARY_FRAME_TEXT, "INVALID_JSON"))
                        continue
                if message["type"] == "websocket.disconnect":
                    presence.mark_gone()
                await frames.put(message)
                if message["type"] == "websocket.disconnect":
                    return

        async def reply(message: dict[str, Any]) -> None:
            if message["type"] == "websocket.send":
                quiet.answered()
                refusal[:] = _capacity_refusal(message) or refusal
            if message["type"] == "websocket.close" and refusal:
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(spoke.wait(), self._REFUSAL_GRACE_S)
                message = {"type": "websocket.close", "code": 1013, "reason": refusal[0][:120]}
            await send(message)

        async def close_when_idle(idle_s: float) -> None:
            await quiet.outlast(idle_s)
            logger.info("closing a session idle for %.0f s", idle_s)
            presence.mark_gone()
            await frames.put({"type": "websocket.disconnect", "code": 1001})  # OpenEnv's handler closes the env

        reader = asyncio.create_task(read())
        idle = asyncio.create_task(close_when_idle(self._idle_timeout_s)) if self._idle_timeout_s else None
        token = _PRESENCE.set(presence)
        try:
            await self.app(scope, frames.get, reply)
        except (WebSocketDisconnect, WebSocketDisconnected, OSError) as e:  # OSError: uvicorn's ClientDisconnected
            logger.info("a client left mid-step (%s); its session is closed", type(e).__name__)
        finally:
            _PRESENCE.reset(token)
            reader.cancel()
            if idle is not None and idle.done() and not idle.cancelled():
                with contextlib.suppress(Exception):  # the client may be gone already
                    await send({"type": "websocket.close", "code": 1001, "reason": "idle session closed"})
            if idle is not None:
                idle.cancel()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _error_frame(text: str, code: str) -> dict[str, Any]:
    """An OpenEnv error frame as an ASGI message."""
    return {"type": "websocket.send", "text": json.dumps({"type": "error", "data": {"message": text, "code": code}})}


def _capacity_refusal(message: dict[str, Any]) -> list[str]:
    """`[close reason]` when `message` is OpenEnv's CAPACITY_REACHED frame, else `[]`."""
    text = message.get("text") or ""
    if "CAPACITY_REACHED" not in text:
        return []
    with contextlib.suppress(ValueError, AttributeError, TypeError):
        data = json.loads(text)["data"]
        if data.get("code") == "CAPACITY_REACHED":
            return [f"CAPACITY_REACHED: {data.get('message', '')}"]
    return []


def _client_safe(method: Callable[..., Any]) -> Callable[..., Any]:
    """Let the client's own mistakes through with their message; log anything else here, with its
    traceback, and send the client only a one-line internal error."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except _CLIENT_ERRORS:
            raise
        except Exception as e:
            logger.exception("KernelGym session failed in %s", method.__name__)
            raise RuntimeError(f"internal error in the KernelGym server ({type(e).__name__}); "
                               "the server log has the details") from None

    return wrapper


class KernelGymEnvironment(Environment[KernelGymAction, KernelGymObservation, KernelGymState]):
    """One session's episode: a `KernelEnv` on the server's shared context.

    `reset(task=ID | index=N [split="train"] | seed=S)` starts an episode (no task or index: a random
    one); `step(KernelGymAction(answer=...))` judges one answer; errors (step before reset or after
    done, unknown task, unknown reset argument) raise with a message the client receives verbatim.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True  # sessions share nothing mutable but the thread-safe context

    def __init__(self, context: ServerContext) -> None:
        super().__init__()
        self._context = context
        self._env = KernelEnv(judge_config=context.judge_config, reward_config=context.reward_config,
                              env_config=context.env_config, templates=context.templates, judge_fn=self._judge)
        self._episode_id: str | None = None
        self._presence: _Presence | None = None
        self._reply_within_s: float | None = None
        self._view = "full"
        self._pending: asyncio.Future[KernelGymObservation] | None = None  # a step answered as pending
        self._provisional = 0.0  # the reward the pending turn paid ahead (the reward's floor)
        # Steps run here rather than in OpenEnv's session thread because step_async must be able to
        # stop waiting on one; one thread per session keeps a session's steps in order.
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kernelgym-session")
        self._closed = False
        context.session_opened()

    def _judge(self, task: Task, answer: str, config: JudgeConfig) -> EvalResult:
        return self._context.judge(task, answer, config, gone=self._presence.gone if self._presence else None)

    @_client_safe
    def reset(self, seed: int | None = None, episode_id: str | None = None, task: str | None = None,
              split: str | None = None, index: int | None = None, earlier_rewards: list[float] | None = None,
              reply_within_s: float | None = None, view: str = "full", **kwargs: Any) -> KernelGymObservation:
        # OpenEnv passes only the arguments a signature names, unless it takes **kwargs: taking them
        # turns a misspelt argument (task_id=...) into an error instead of a silently random task.
        if kwargs:
            raise ValueError(f"unknown reset argument(s): {', '.join(sorted(kwargs))}; reset takes task, "
                             "index (with split), seed, episode_id, earlier_rewards, reply_within_s and view")
        if view not in VIEWS:
            raise ValueError(f"unknown view {view!r}; one of {', '.join(VIEWS)}")
        if split is not None and split != SPLIT:
            raise ValueError(f"unknown split {split!r}; this server has one split, {SPLIT!r}")
        if reply_within_s is not None and not reply_within_s > 0:
            raise ValueError(f"reply_within_s must be positive, not {reply_within_s}")
        if self._pending is not None and not self._pending.done():
            raise ValueError("an answer of this episode is still being judged: step once more (any answer) "
                             "to collect its result, then reset")
        self._pending, self._reply_within_s, self._view = None, reply_within_s, view
        obs = self._env.reset(self._context.pick(task, index, seed), earlier_rewards or ())
        self._episode_id = episode_id or uuid.uuid4().hex
        obs.metadata["episode_id"] = self._episode_id
        return self._shown(KernelGymObservation.from_env(obs))

    @_client_safe
    def step(self, action: KernelGymAction, timeout_s: float | None = None, **kwargs: Any) -> KernelGymObservation:
        # timeout_s is part of OpenEnv's signature; the judge's own deadline (JudgeConfig.timeout_s) applies.
        return self._shown(KernelGymObservation.from_env(self._env.step(action.answer)))

    def _shown(self, obs: KernelGymObservation) -> KernelGymObservation:
        """`obs` as the session's view shows it: in `chat`, the messages alone (the feedback once, as the
        turn renders it), without the judge result and the metadata a trainer reads; a pending turn keeps
        `metadata["pending"]`, so a client can collect it without showing the model."""
        if self._view == "full":
            return obs
        pending = {"pending": True} if obs.metadata.get("pending") else {}
        return KernelGymObservation(messages=obs.messages, done=obs.done, reward=obs.reward, metadata=pending)

    async def step_async(self, action: KernelGymAction, timeout_s: float | None = None,
                         **kwargs: Any) -> KernelGymObservation:
        """What OpenEnv's WebSocket handler awaits: `step` in this session's thread, given up when the
        client leaves, so the session is closed at once (a judge call already running still finishes).

        With `reply_within_s` (reset), a step not judged by then, however long the queue for a judge
        slot, is answered with a pending observation (`metadata["pending"]`) paying the reward's floor
        (0 for drkernel, the cheat penalty with penalties); the session's next step, whatever its action,
        collects that answer's result instead of judging the action, paying its reward minus the floor."""
        self._presence = _PRESENCE.get()
        step, self._pending = self._pending, None
        provisional, self._provisional = self._provisional, 0.0
        if step is None:
            step = asyncio.get_running_loop().run_in_executor(self._worker, self.step, action)
            step.add_done_callback(lambda f: f.cancelled() or f.exception())  # a late failure is nobody's to see
        waits = {step} if self._presence is None else {step, asyncio.ensure_future(self._presence.wait_gone())}
        try:
            await asyncio.wait(waits, timeout=self._reply_within_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits - {step}:
                w.cancel()
        if step.done():
            obs = step.result()
            if provisional:  # the pending turn already paid the floor: pay the rest now
                obs = obs.model_copy(update={"reward": (obs.reward or 0.0) - provisional})
            return obs
        if self._presence is not None and self._presence.gone.is_set():
            raise ClientLeft("the client closed the connection while its answer was being judged")
        self._pending = step
        # the pending turn pays the least an answer can earn, and the collecting step the difference,
        # so ending the episode (or letting a client's turn limit end it) before collecting never pays
        self._provisional = self._env.reward_config.floor
        return self._pending_observation()

    def _pending_observation(self) -> KernelGymObservation:
        state = self._env.state
        return self._shown(KernelGymObservation(
            messages=[{"role": "user", "content": PENDING_TEXT}], done=False, reward=self._provisional,
            metadata={"task_id": state.task_id, "turn": state.turn, "episode_id": self._episode_id, "pending": True}))

    @property
    def state(self) -> KernelGymState:
        return KernelGymState.from_env(self._env.state, self._episode_id)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._worker.shutdown(wait=False)  # a judge call in flight finishes in its thread, then it ends
            self._context.session_closed()

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=ENV_NAME, version=__version__,
            description="Write a faster Triton replacement for a PyTorch module; each answer is judged for "
                        "correctness, rule-breaking and speed, and the feedback comes back as the next user turn.")

    # OpenEnv's TaskProvider routes (/kernelgym/splits, /kernelgym/tasks, ...): one split, the served tasks.
    def list_splits(self) -> list[str]:
        return [SPLIT]

    def list_tasks(self, split: str) -> list[dict[str, Any]]:
        return [self._context.describe(i) for i in range(self.num_tasks(split))]

    def num_tasks(self, split: str) -> int:
        return len(self._context.tasks) if split == SPLIT else 0

    def get_task(self, split: str, index: int) -> dict[str, Any]:
        if not 0 <= index < self.num_tasks(split):
            raise IndexError(index)  # OpenEnv answers 400
        return self._context.describe(index)

    def get_task_range(self, split: str, start: int | None = None, stop: int | None = None) -> list[dict[str, Any]]:
        return [self._context.describe(i) for i in range(self.num_tasks(split))[start:stop]]


def create_server_app(judge_config: JudgeConfig | None = None, reward_config: RewardConfig | None = None,
                      env_config: EnvConfig | None = None, tasks: str | list[Task] = "builtin",
                      max_sessions: int = DEFAULT_MAX_SESSIONS, jobs: int | None = None,
                      judge_fn: JudgeFn | None = None, token: str | None = None,
                      idle_timeout_s: float | None = DEFAULT_IDLE_TIMEOUT_S, local_only: bool = False) -> FastAPI:
    """The OpenEnv app serving KernelGym episodes on `tasks` (a task spec or a list of tasks), at most
    `max_sessions` WebSocket sessions and `jobs` judge calls at once (default: CPU count, max 8).
    `token` (default: $KERNELGYM_TOKEN; none: open) guards `/ws`; with no token, `local_only` opens it
    to this host's own clients only (for an app whose bind address is not ours to choose). A session that owes its client
    nothing for `idle_timeout_s` (None: never) is closed, so a client that forgets it cannot hold a
    slot for ever. `judge_fn` replaces the judge (tests, the step-overhead benchmark)."""
    if idle_timeout_s is not None and idle_timeout_s <= 0:
        raise ValueError(f"idle_timeout_s must be positive or None, not {idle_timeout_s}")
    judge_config = judge_config or JudgeConfig()
    if judge_fn is None:
        # Resolve `auto` once here, not on every step (it asks torch whether a GPU is there).
        judge_config = JudgeConfig.from_dict({**judge_config.__dict__, "device": judge_config.resolved_device()})
    if isinstance(tasks, str):
        from kernelgym.tasks.loaders import resolve_tasks

        tasks = resolve_tasks(tasks)
    if jobs is None:
        from kernelgym.judge.batch import default_jobs

        jobs = default_jobs()
    context = ServerContext(list(tasks), judge_config, reward_config or RewardConfig(), env_config or EnvConfig(),
                            jobs=jobs, max_sessions=max_sessions, judge_fn=judge_fn)
    app = create_app(functools.partial(KernelGymEnvironment, context), KernelGymAction, KernelGymObservation,
                     env_name=ENV_NAME, max_concurrent_envs=max_sessions, state_cls=KernelGymState,
                     mode="production")

    @app.get("/sessions", tags=["Health"], summary="Live sessions and judge calls in flight")
    def sessions() -> dict[str, int]:
        return context.status()

    app.add_middleware(_SessionGate, token=token if token is not None else (os.environ.get(TOKEN_ENV) or None),
                       idle_timeout_s=idle_timeout_s, local_only=local_only)
    app.state.kernelgym = context
    return app


def serve(app: FastAPI, host: str = "127.0.0.1", port: int = DEFAULT_PORT, log_level: str = "info") -> None:
    """Run `app` in the foreground until interrupted."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, ws_max_size=WS_MAX_BYTES, log_level=log_level)


class BackgroundServer:
    """`with BackgroundServer(app) as url:` serves `app` on a free local port from a thread (tests,
    benchmarks, a trainer that hosts its own environment server)."""

    def __init__(self, app: FastAPI, host: str = "127.0.0.1", ws_max_size: int = WS_MAX_BYTES,
                 startup_timeout_s: float = 30.0) -> None:
        import uvicorn

        self._host, self._startup_timeout_s = host, startup_timeout_s
        self._server = uvicorn.Server(uvicorn.Config(app, host=host, port=0, ws_max_size=ws_max_size,
                                                     log_level="warning"))
        self._thread: threading.Thread | None = None

    def __enter__(self) -> str:
        # Binding here, before the thread starts, makes the port known without a race for it.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((self._host, 0))
        port = sock.getsockname()[1]
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]},
                                        name="kernelgym-env-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + self._startup_timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.__exit__()
                sock.close()
                raise RuntimeError("the environment server did not start")
            time.sleep(0.02)
        return f"http://{self._host}:{port}"

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


__all__ = ["BackgroundServer", "KernelGymEnvironment", "ServerContext", "create_server_app", "serve"]
