"""Python clients of the HTTP API: `KernelGymClient` (sync) and `AsyncKernelGymClient`, over httpx.

Both speak in the service's own types (`EvalRequest` in; `Submission`, `Record`, `EvalResult`
out), so code written against an embedded `Service` reads the same against a remote one. Errors
the server reports become `KernelGymError` with its status code and message.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import httpx

from kernelgym.judge.result import EvalResult
from kernelgym.service.admission import EvalRequest, Submission
from kernelgym.service.store import Record

TOKEN_ENV = "KERNELGYM_TOKEN"
DEFAULT_URL = "http://127.0.0.1:8000"
MAX_POLL_S = 600.0  # the server's limit for one long poll
_SLACK_S = 30.0  # HTTP timeout beyond the time the server was asked to wait


class KernelGymError(RuntimeError):
    """The server refused or failed a call; `status_code` and `detail` are what it said."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(f"HTTP {status_code}: {detail}")
        self.status_code = status_code
        self.detail = detail


def _headers(token: str | None) -> dict[str, str]:
    token = token if token is not None else os.environ.get(TOKEN_ENV)
    return {"Authorization": f"Bearer {token}"} if token else {}


def _batch_body(requests: Sequence[EvalRequest | dict[str, Any]]) -> dict[str, Any]:
    return {"requests": [dataclasses.asdict(r) if isinstance(r, EvalRequest) else dict(r) for r in requests]}


def _check(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except (ValueError, AttributeError):
            detail = response.text
        raise KernelGymError(response.status_code, str(detail))
    return response.json()


def _submission(d: dict[str, Any]) -> Submission:
    return Submission(batch_id=d["batch_id"], ids=list(d["ids"]), cache_hits=d.get("cache_hits", 0))


def _sse_data(lines: list[str]) -> dict[str, Any] | None:
    """The record of one server-sent event, or None for the closing `end` event."""
    if any(line == "event: end" for line in lines):
        return None
    data = "\n".join(line[len("data: "):] for line in lines if line.startswith("data: "))
    return json.loads(data) if data else None


class KernelGymClient:
    """Blocking client. Use as a context manager, or call `close()`."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, timeout: float = 60.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        self.timeout = timeout
        self._http = httpx.Client(base_url=base_url, headers=_headers(token), timeout=timeout, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "KernelGymClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def submit(self, requests: Sequence[EvalRequest | dict[str, Any]]) -> Submission:
        """Submit a batch; every returned id will get exactly one result."""
        return _submission(_check(self._http.post("/v1/batches", json=_batch_body(requests))))

    def get(self, request_id: str, wait: float = 0.0) -> Record:
        """A request's record, after waiting up to `wait` seconds (at most one long poll) for it to finish."""
        wait = min(wait, MAX_POLL_S)
        r = self._http.get(f"/v1/results/{request_id}", params={"wait": wait}, timeout=self.timeout + wait)
        return Record.from_dict(_check(r))

    def wait(self, ids: Sequence[str], timeout: float | None = None) -> list[Record]:
        """Records of `ids` (in that order) once all are final or `timeout` seconds passed (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = MAX_POLL_S if deadline is None else max(0.0, min(MAX_POLL_S, deadline - time.monotonic()))
            body = _check(self._http.post("/v1/results:wait", json={"ids": list(ids), "timeout": left},
                                          timeout=left + _SLACK_S))
            if body["done"] or (deadline is not None and time.monotonic() >= deadline):
                return [Record.from_dict(d) for d in body["results"]]

    def stream(self, batch_id: str, timeout: float | None = None) -> Iterator[Record]:
        """Each record of the batch as it becomes final (NDJSON stream), until all are or `timeout` passes."""
        params = {"format": "ndjson"} | ({} if timeout is None else {"timeout": timeout})
        with self._http.stream("GET", f"/v1/batches/{batch_id}/stream", params=params,
                               timeout=httpx.Timeout(self.timeout, read=None)) as r:
            if r.status_code >= 400:
                r.read()
                _check(r)
            for line in r.iter_lines():
                if line.strip():
                    yield Record.from_dict(json.loads(line))

    def cancel(self, request_id: str) -> bool:
        """Cancel a request; True if this call cancelled it (False: it was already final)."""
        return bool(_check(self._http.delete(f"/v1/results/{request_id}"))["cancelled"])

    def evaluate(self, task_id: str, answer: str, config: dict[str, Any] | None = None,
                 task_source: str | None = None, timeout: float = MAX_POLL_S) -> EvalResult:
        """Judge one answer and return its result (the stateless route; raises on a 504 timeout)."""
        body = {"task_id": task_id, "answer": answer, "config": config or {}, "task_source": task_source,
                "timeout": min(timeout, MAX_POLL_S)}
        return EvalResult.from_dict(_check(self._http.post("/v1/evaluate", json=body, timeout=timeout + _SLACK_S)))

    def check_access(self) -> None:
        """Raise `KernelGymError` unless the service answers an authenticated call (401: the token is
        missing or wrong), so a misconfigured client fails when it starts, not at its first request."""
        response = self._http.get("/metrics")
        if response.status_code >= 400:
            _check(response)

    def health(self) -> dict[str, Any]:
        return _check(self._http.get("/health"))


class AsyncKernelGymClient:
    """The same calls for asyncio code (`async with AsyncKernelGymClient(url) as kg: ...`)."""

    def __init__(self, base_url: str = DEFAULT_URL, token: str | None = None, timeout: float = 60.0,
                 transport: httpx.AsyncBaseTransport | None = None, limits: httpx.Limits | None = None) -> None:
        self.timeout = timeout
        self._http = httpx.AsyncClient(base_url=base_url, headers=_headers(token), timeout=timeout,
                                       transport=transport, limits=limits or httpx.Limits(max_connections=100))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> "AsyncKernelGymClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def submit(self, requests: Sequence[EvalRequest | dict[str, Any]]) -> Submission:
        return _submission(_check(await self._http.post("/v1/batches", json=_batch_body(requests))))

    async def get(self, request_id: str, wait: float = 0.0) -> Record:
        wait = min(wait, MAX_POLL_S)
        r = await self._http.get(f"/v1/results/{request_id}", params={"wait": wait}, timeout=self.timeout + wait)
        return Record.from_dict(_check(r))

    async def wait(self, ids: Sequence[str], timeout: float | None = None) -> list[Record]:
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            left = MAX_POLL_S if deadline is None else max(0.0, min(MAX_POLL_S, deadline - time.monotonic()))
            body = _check(await self._http.post("/v1/results:wait", json={"ids": list(ids), "timeout": left},
                                                timeout=left + _SLACK_S))
            if body["done"] or (deadline is not None and time.monotonic() >= deadline):
                return [Record.from_dict(d) for d in body["results"]]

    async def stream(self, batch_id: str, timeout: float | None = None, sse: bool = False) -> AsyncIterator[Record]:
        """Records as they become final; `sse` reads the server-sent-events form instead of NDJSON."""
        params = {"format": "sse" if sse else "ndjson"} | ({} if timeout is None else {"timeout": timeout})
        async with self._http.stream("GET", f"/v1/batches/{batch_id}/stream", params=params,
                                     timeout=httpx.Timeout(self.timeout, read=None)) as r:
            if r.status_code >= 400:
                await r.aread()
                _check(r)
            event: list[str] = []
            async for line in r.aiter_lines():
                if not sse:
                    if line.strip():
                        yield Record.from_dict(json.loads(line))
                elif line:
                    event.append(line)
                else:  # a blank line ends an event
                    data = _sse_data(event)
                    event = []
                    if data is not None:
                        yield Record.from_dict(data)

    async def cancel(self, request_id: str) -> bool:
        return bool(_check(await self._http.delete(f"/v1/results/{request_id}"))["cancelled"])

    async def evaluate(self, task_id: str, answer: str, config: dict[str, Any] | None = None,
                       task_source: str | None = None, timeout: float = MAX_POLL_S) -> EvalResult:
        body = {"task_id": task_id, "answer": answer, "config": config or {}, "task_source": task_source,
                "timeout": min(timeout, MAX_POLL_S)}
        r = await self._http.post("/v1/evaluate", json=body, timeout=timeout + _SLACK_S)
        return EvalResult.from_dict(_check(r))

    async def health(self) -> dict[str, Any]:
        return _check(await self._http.get("/health"))


def service_judge_fn(base_url: str, token: str | None = None, timeout: float = MAX_POLL_S) -> Callable[..., EvalResult]:
    """A `judge(task, answer, config)` stand-in that judges through a running service: what
    `KernelEnv(judge_fn=...)` and `kernelgym env serve --service-url` use, so episodes share the
    service's GPUs, result store and cache. The task travels as its source (any task works, not only
    the server's built-ins); `config` travels as the fields that differ from the defaults (the worker
    sets the device). The service's token is checked here, once, before any episode needs it."""
    from kernelgym.judge.config import JudgeConfig

    client = KernelGymClient(base_url, token=token)
    try:
        client.check_access()
    except KernelGymError as e:
        client.close()
        raise KernelGymError(e.status_code, f"{e.detail}: the judging service at {base_url} refused this client's "
                             f"token (set ${TOKEN_ENV}, or $KERNELGYM_SERVICE_TOKEN for kernelgym env serve)") from None
    defaults = dataclasses.asdict(JudgeConfig())

    def judge_via_service(task: Any, answer: str | bytes, config: JudgeConfig | None = None) -> EvalResult:
        fields = dataclasses.asdict(config) if config is not None else {}
        overrides = {k: v for k, v in fields.items() if k not in ("device", "seed") and v != defaults[k]}
        text = answer.decode("utf-8", errors="replace") if isinstance(answer, bytes) else answer
        return client.evaluate(task.task_id, text, overrides, task_source=task.source, timeout=timeout)

    return judge_via_service
