"""`kernelgym serve`: a backend, the result store, the service and the HTTP API in one process.

Backends are imported only when chosen, so the API runs (and its tests pass) without Ray or the
worker processes installed.
"""

from __future__ import annotations

import logging
from pathlib import Path

from kernelgym.service.backend import Backend

log = logging.getLogger(__name__)

BACKENDS = ("local", "ray")


class ServiceStartError(RuntimeError):
    """The backend could not start (no Ray cluster to join, no device): said in one line, not a traceback."""


RAY_HINT = ("start a cluster first (launch/ray_head.sh, or `ray start --head` on this node) or set RAY_ADDRESS; "
            "`--devices cpu` still needs one")


def build_backend(kind: str, devices: str | None = None, jobs: int | None = None,
                  workers_per_device: int = 1) -> Backend:
    """The backend named `kind`. `devices`: local: comma-separated `cuda:N`/`cpu` (default every
    local GPU, else the CPU); ray: auto, gpu, cpu or a number of CPU actors. `jobs`: evaluations in
    flight per worker (the backend's default when None); `workers_per_device`: local only."""
    if kind == "local":
        from kernelgym.service.local_backend import LocalBackend, LocalBackendConfig

        names = tuple(d.strip() for d in (devices or "").split(",") if d.strip())
        options = {"devices": names, "workers_per_device": workers_per_device} | (
            {} if jobs is None else {"jobs_per_worker": jobs})
        return LocalBackend(LocalBackendConfig(**options))
    if kind == "ray":
        from kernelgym.service.ray_backend import RayBackend

        spec: str | int = devices or "auto"
        if isinstance(spec, str) and spec.isdigit():
            spec = int(spec)
        return RayBackend(devices=spec, **({} if jobs is None else {"jobs": jobs}))
    raise ValueError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")


def local_gpu_model(devices: str | None) -> str | None:
    """The name of the first local GPU the local backend will use (part of the cache key), or
    None when it runs on the CPU or torch is not installed here."""
    if devices and not any(d.strip().startswith("cuda") for d in devices.split(",")):
        return None
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    first = next((d.strip() for d in (devices or "").split(",") if d.strip().startswith("cuda")), "cuda:0")
    return torch.cuda.get_device_name(torch.device(first))


def serve(backend: str = "local", host: str = "127.0.0.1", port: int = 8000, db: str | Path = "kernelgym.db",
          token: str | None = None, jobs: int | None = None, devices: str | None = None, max_attempts: int = 3,
          payload_ttl_days: float | None = None, log_level: str = "info", workers_per_device: int = 1) -> None:
    """Run the service until interrupted. `token` None reads $KERNELGYM_TOKEN (no auth if unset)."""
    import uvicorn

    from kernelgym.service.app import create_app
    from kernelgym.service.service import Service
    from kernelgym.service.store import Store

    store = Store(db)
    gpu_model = local_gpu_model(devices) if backend == "local" else None
    service = Service(build_backend(backend, devices, jobs, workers_per_device), store, max_attempts=max_attempts,
                      payload_ttl_days=payload_ttl_days, gpu_model=gpu_model)
    app = create_app(service, token=token)  # the app's lifespan stops the service (starting it again is a no-op)
    # Started before uvicorn, not in the app's startup: a backend that cannot start is one line, and
    # Ray's driver installs its signal handlers before uvicorn installs its own, so SIGTERM stops the
    # server cleanly (started inside the app, Ray's handler took SIGTERM and the server did not stop).
    try:
        service.start()
    except Exception as e:
        store.close()
        hint = f": {RAY_HINT}" if backend == "ray" and isinstance(e, ConnectionError) else ""
        raise ServiceStartError(f"the {backend} backend did not start: {e}{hint}") from e
    log.info("serving on http://%s:%d with the %s backend; results in %s", host, port, backend, db)
    try:
        uvicorn.run(app, host=host, port=port, log_level=log_level)
    finally:
        service.close()
        store.close()
