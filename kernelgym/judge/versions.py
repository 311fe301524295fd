"""Software versions that make results comparable (and key the reference-timing cache)."""

from __future__ import annotations

import functools
import platform
from importlib import metadata

import kernelgym


@functools.lru_cache(maxsize=1)
def software_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), "kernelgym": kernelgym.__version__}
    for dist in ("torch", "triton"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    return out
