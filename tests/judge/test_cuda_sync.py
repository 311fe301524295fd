"""`judge.cuda_sync`: with KERNELGYM_CUDA_SYNC=blocking each CUDA process of the judge asks the driver for blocking
synchronisation on its device before the primary context exists, and never fails a process that cannot; by default
CUDA's own way of waiting stays (blocking measured no faster on an H200: issue 26)."""

import ctypes

import pytest

from kernelgym.judge import cuda_sync


class FakeDriver:
    """The three driver entry points, recording their calls."""

    def __init__(self, fail_at: str = "") -> None:
        self.calls: list[tuple] = []
        self.fail_at = fail_at

    def _rc(self, name: str) -> int:
        return 101 if name == self.fail_at else 0

    def cuInit(self, flags):
        self.calls.append(("cuInit", flags))
        return self._rc("cuInit")

    def cuDeviceGet(self, ref, ordinal):
        ref._obj.value = 40 + ordinal.value  # a CUdevice handle is not the ordinal
        self.calls.append(("cuDeviceGet", ordinal.value))
        return self._rc("cuDeviceGet")

    def cuDevicePrimaryCtxSetFlags_v2(self, dev, flags):
        self.calls.append(("setFlags", dev.value, flags.value))
        return self._rc("setFlags")


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    monkeypatch.setattr(cuda_sync, "_state", {})
    monkeypatch.delenv(cuda_sync.SYNC_VAR, raising=False)


def test_blocking_sync_is_set_on_the_named_device_before_its_context(monkeypatch):
    monkeypatch.setenv(cuda_sync.SYNC_VAR, "blocking")
    driver = FakeDriver()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: driver)
    assert cuda_sync.use_blocking_sync(2) == "blocking"
    assert driver.calls == [("cuInit", 0), ("cuDeviceGet", 2), ("setFlags", 42, 0x04)]
    assert cuda_sync.use_blocking_sync(2) == "blocking" and len(driver.calls) == 3  # once per process and device


@pytest.mark.parametrize("value", [None, "auto", "nonsense"])
def test_auto_leaves_cuda_alone_and_is_the_default(monkeypatch, value):
    driver = FakeDriver()
    monkeypatch.setattr(ctypes, "CDLL", lambda name: driver)
    if value is not None:
        monkeypatch.setenv(cuda_sync.SYNC_VAR, value)
    assert cuda_sync.use_blocking_sync(0).startswith("auto") and driver.calls == []


@pytest.mark.parametrize("step", ["cuInit", "cuDeviceGet", "setFlags"])
def test_a_driver_error_is_reported_not_raised(monkeypatch, step):
    monkeypatch.setenv(cuda_sync.SYNC_VAR, "blocking")
    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeDriver(fail_at=step))
    assert cuda_sync.use_blocking_sync(0) == "not set: CUDA driver error 101"


def test_no_driver_library_is_reported_not_raised(monkeypatch):
    monkeypatch.setenv(cuda_sync.SYNC_VAR, "blocking")
    def missing(name):
        raise OSError(f"{name}: cannot open shared object file")
    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert cuda_sync.use_blocking_sync(0).startswith("not set: no CUDA driver library")


def test_ordinals():
    assert [cuda_sync.ordinal_of(d) for d in ("cuda", "cuda:3", "cpu", "cuda:x")] == [0, 3, None, None]
