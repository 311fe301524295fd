"""The HTTP API: thin FastAPI routers over a `Service` (one router per resource).

Routes translate HTTP to service calls and service errors to status codes; no scheduling or
storage logic lives here. Waiting routes are `async` so that a thousand clients long-polling hold
no threads; routes that touch the store for one quick call are plain `def` (run in a thread).
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from prometheus_client import CONTENT_TYPE_LATEST

import kernelgym
from kernelgym.judge.result import EvalResult
from kernelgym.service import admission
from kernelgym.service.admission import RequestRejected
from kernelgym.service.client import TOKEN_ENV
from kernelgym.service.schemas import (MAX_WAIT_S, BatchIn, BatchOut, BatchStatusOut, CancelOut, ErrorOut, EvaluateIn,
                                       HealthOut, ResultOut, WaitIn, WaitOut)
from kernelgym.service.service import Service, ServiceClosed, UnknownRequest
from kernelgym.service.store import CANCELLED, Record

DEFAULT_MAX_BODY_BYTES = 64 << 20
_REJECTED_STATUS = {admission.TOO_MANY: 413, admission.TOO_LARGE: 413}  # every other rejection: 422
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": ErrorOut} for code in (400, 401, 404, 413, 422, 503)}


async def get_service(request: Request) -> Service:
    return request.app.state.service  # async: a plain def dependency would cost a thread hop per request


ServiceDep = Annotated[Service, Depends(get_service)]
_bearer = HTTPBearer(auto_error=False)


async def require_token(request: Request,
                        creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """401 unless the app has no token or the request carries it as `Authorization: Bearer ...`."""
    if not _has_token(request, creds):
        raise HTTPException(401, "missing or wrong bearer token", headers={"WWW-Authenticate": "Bearer"})


def _has_token(request: Request, creds: HTTPAuthorizationCredentials | None) -> bool:
    token: str | None = request.app.state.token
    if token is None:
        return True
    return creds is not None and secrets.compare_digest(creds.credentials.encode(), token.encode())


def _out(rec: Record) -> ResultOut:
    return ResultOut.model_validate(rec)


# --- batches --------------------------------------------------------------------------------------

batches = APIRouter(prefix="/v1/batches", tags=["batches"], dependencies=[Depends(require_token)], responses=_ERRORS)


@batches.post("", status_code=202, response_model=BatchOut)
def submit_batch(body: BatchIn, service: ServiceDep) -> BatchOut:
    """Accept a batch of requests. Once this answers, every id gets exactly one result."""
    sub = service.submit([r.to_request() for r in body.requests])
    return BatchOut(batch_id=sub.batch_id, ids=sub.ids, cache_hits=sub.cache_hits)


@batches.get("/{batch_id}", response_model=BatchStatusOut)
def batch_status(batch_id: str, service: ServiceDep) -> BatchStatusOut:
    """The batch's ids and how many are in each state."""
    ids = _batch_ids(service, batch_id)
    states = Counter(r.state for r in service.wait(ids, timeout=0))
    return BatchStatusOut(batch_id=batch_id, ids=ids, states=dict(states),
                          done=states.get("done", 0) + states.get(CANCELLED, 0) == len(ids))


@batches.get("/{batch_id}/stream", response_class=StreamingResponse,
             responses={200: {"content": {"application/x-ndjson": {}, "text/event-stream": {}}}})
async def stream_batch(batch_id: str, request: Request, service: ServiceDep,
                       format: Literal["ndjson", "sse"] | None = None,  # noqa: A002 - the query parameter's name
                       timeout: Annotated[float | None, Query(ge=0)] = None) -> StreamingResponse:
    """Each result of the batch as it becomes final (those already final first): NDJSON lines of
    `ResultOut`, or server-sent events (`event: result`) with `?format=sse` or
    `Accept: text/event-stream`. Ends when all are final or after `timeout` seconds."""
    ids = await asyncio.to_thread(_batch_ids, service, batch_id)
    sse = format == "sse" or (format is None and "text/event-stream" in request.headers.get("accept", ""))

    async def lines() -> AsyncIterator[str]:
        async for rec in service.stream(ids, timeout):
            data = _out(rec).model_dump_json()
            yield f"event: result\ndata: {data}\n\n" if sse else data + "\n"
        if sse:
            yield "event: end\ndata: {}\n\n"

    return StreamingResponse(lines(), media_type="text/event-stream" if sse else "application/x-ndjson")


def _batch_ids(service: Service, batch_id: str) -> list[str]:
    ids = service.batch(batch_id)
    if not ids:
        raise HTTPException(404, f"unknown batch {batch_id!r}")
    return ids


# --- results --------------------------------------------------------------------------------------

results = APIRouter(prefix="/v1/results", tags=["results"], dependencies=[Depends(require_token)], responses=_ERRORS)


@results.post(":wait", response_model=WaitOut)
async def wait_results(body: WaitIn, service: ServiceDep) -> WaitOut:
    """Wait until every id is final or `timeout` passes; all records, final or not."""
    recs = await service.wait_async(body.ids, body.timeout)
    return WaitOut(results=[_out(r) for r in recs], done=all(r.final for r in recs))


@results.get("/{request_id}", response_model=ResultOut)
async def get_result(request_id: str, service: ServiceDep,
                     wait: Annotated[float, Query(ge=0, le=MAX_WAIT_S, description="seconds to wait for a final "
                                                  "state (long poll)")] = 0.0) -> ResultOut:
    """One request's record, after waiting up to `wait` seconds for it to become final."""
    if wait > 0:
        [rec] = await service.wait_async([request_id], wait)
    else:
        rec = await asyncio.to_thread(service.get, request_id)
        if rec is None:
            raise HTTPException(404, f"unknown request id {request_id}")
    return _out(rec)


@results.delete("/{request_id}", response_model=CancelOut)
def cancel_result(request_id: str, service: ServiceDep) -> CancelOut:
    """Cancel a request without a result yet (a job already running is not interrupted; its result is dropped)."""
    if service.get(request_id) is None:
        raise HTTPException(404, f"unknown request id {request_id}")
    cancelled = service.cancel(request_id)
    rec = service.get(request_id)
    return CancelOut(id=request_id, cancelled=cancelled, state=rec.state if rec else CANCELLED)


# --- stateless evaluation -------------------------------------------------------------------------

evaluate = APIRouter(tags=["evaluate"], dependencies=[Depends(require_token)],
                     responses={**_ERRORS, 409: {"model": ErrorOut, "description": "the request was cancelled"},
                                504: {"model": ErrorOut, "description": "not judged within `timeout`"}})


@evaluate.post("/v1/evaluate", response_model=EvalResult)
async def evaluate_one(body: EvaluateIn, service: ServiceDep) -> EvalResult:
    """Judge one request and answer with its `EvalResult` (a reward function's whole API).
    504 if it takes longer than `timeout`; the request goes on and its id is in the message."""
    sub = await asyncio.to_thread(service.submit, [body.to_request()])
    [rec] = await service.wait_async(sub.ids, body.timeout)
    if rec.result is None:
        raise HTTPException(504 if not rec.final else 409, f"request {rec.id} is {rec.state} after "
                            f"{body.timeout:g} s; poll GET /v1/results/{rec.id}")
    return rec.result


# --- operations -----------------------------------------------------------------------------------

ops = APIRouter(tags=["operations"])


@ops.get("/health", response_model=HealthOut)
def health(request: Request, service: ServiceDep,
           creds: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> HealthOut:
    """Liveness and load (no token needed: load balancers and probes call it). Without the token of a
    service that has one, only status, load and version: the store's path, workers and environment
    describe the host."""
    full = service.health()
    if not _has_token(request, creds):
        full = {k: full[k] for k in ("status", "queue_depth", "in_flight", "capacity")}
    return HealthOut(**jsonable_encoder(full), version=kernelgym.__version__)


@ops.get("/metrics", response_class=Response, dependencies=[Depends(require_token)],
         responses={200: {"content": {CONTENT_TYPE_LATEST: {}}}})
def metrics(service: ServiceDep) -> Response:
    """Prometheus metrics: queue depth, results by status, latency histograms, device busy share."""
    return Response(service.prometheus_text(), media_type=CONTENT_TYPE_LATEST)


# --- the app --------------------------------------------------------------------------------------

def create_app(service: Service, token: str | None = None, manage_service: bool = True,
               max_body_bytes: int = DEFAULT_MAX_BODY_BYTES) -> FastAPI:
    """The API over `service`. `token` (default: $KERNELGYM_TOKEN) turns on bearer auth; with
    `manage_service` the app starts the service on startup and closes it on shutdown."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if manage_service:
            await asyncio.to_thread(service.start)
        try:
            yield
        finally:
            if manage_service:
                await asyncio.to_thread(service.close)

    token = token if token is not None else (os.environ.get(TOKEN_ENV) or None)
    # With a token only /health is open: the schema is served behind the token, the browser pages not at all.
    app = FastAPI(title="KernelGym", version=kernelgym.__version__, lifespan=lifespan,
                  description="Judges LLM-written Triton kernels: submit batches, then poll, wait or stream results.",
                  **({"openapi_url": None, "docs_url": None, "redoc_url": None} if token else {}))
    app.state.service = service
    app.state.token = token
    if token:
        @app.get("/openapi.json", include_in_schema=False, dependencies=[Depends(require_token)])
        def openapi() -> JSONResponse:
            return JSONResponse(app.openapi())
    for router in (batches, results, evaluate, ops):
        app.include_router(router)
    _add_error_handlers(app)

    app.add_middleware(_BodyLimit, max_bytes=max_body_bytes)
    return app


class _BodyLimit:
    """Refuses a body whose Content-Length is over the limit before any of it is read (per-answer
    limits are checked after parsing). Pure ASGI, so streaming responses pass through untouched."""

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            length = dict(scope["headers"]).get(b"content-length", b"")
            if length.isdigit() and int(length) > self.max_bytes:
                detail = f"request body is {int(length)} bytes; the limit is {self.max_bytes}"
                await JSONResponse({"detail": detail}, 413)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        malformed = any(e.get("type") == "json_invalid" for e in errors)
        parts = []
        for e in errors:
            if e.get("type") == "json_invalid":
                at = e.get("loc", ("body", "?"))[-1]
                parts.append(f"malformed JSON at character {at}: {e.get('ctx', {}).get('error', e.get('msg'))}")
                continue
            where = ".".join(str(p) for p in e.get("loc", ()) if p != "body") or "request body"
            parts.append(f"{where}: {e.get('msg', 'invalid')}")
        return JSONResponse({"detail": "; ".join(parts), "errors": jsonable_encoder(errors)},
                            status_code=400 if malformed else 422)

    @app.exception_handler(RequestRejected)
    async def rejected(_: Request, exc: RequestRejected) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "reason": exc.reason}, _REJECTED_STATUS.get(exc.reason, 422))

    @app.exception_handler(UnknownRequest)
    async def unknown(_: Request, exc: UnknownRequest) -> JSONResponse:
        return JSONResponse({"detail": str(exc.args[0])}, 404)

    @app.exception_handler(ServiceClosed)
    async def closed(_: Request, exc: ServiceClosed) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, 503)

