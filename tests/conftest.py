import os

import pytest

def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


# CPU CI: every Triton kernel runs in the interpreter. Never on a GPU machine: there the interpreter's
# CPU stand-ins (`make_interpreter_faithful`: torch.cuda device facts, driver) would leak into the GPU
# tests of the same process (`isinstance() arg 2 must be a type` in tests/gpu).
if not _has_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
