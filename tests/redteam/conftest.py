"""The red-team corpus judges hundreds of answers: each evaluation takes its answer and replay processes
from a warm pool forked from a fork server (torch and triton imported once per test process), as the
corpus builder and the service do, instead of paying two interpreter starts and the imports each time."""

import os

import pytest

from kernelgym.worker.warm_pool import batch_pool


@pytest.fixture(scope="session", autouse=True)
def _warm_cpu_processes():
    if os.environ.get("KERNELGYM_TEST_WARM_POOL", "1") == "0":
        yield None
        return
    with batch_pool("cpu", jobs=1) as pool:
        yield pool
