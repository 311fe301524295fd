"""The output area's page-locked prefix (`protocol.OutputArea.pin`): grown by doubling, capped, released
at close, and off after a refusal. The CUDA registration calls are recorded stand-ins here (CPU)."""

from __future__ import annotations

import pytest

from kernelgym.judge import protocol

MiB = 1 << 20


@pytest.fixture()
def calls(monkeypatch):
    class Log(list):
        state = {"refuse": False}

    log = Log()
    state = log.state

    def register(address: int, nbytes: int) -> bool:
        log.append(("register", address, nbytes))
        return not state["refuse"]

    monkeypatch.setattr(protocol, "_host_register", register)
    monkeypatch.setattr(protocol, "_host_unregister", lambda address: log.append(("unregister", address)))
    return log


def _area(capacity: int = 16 << 30) -> protocol.OutputArea:
    area = protocol.OutputArea.create(capacity)
    if area is None:
        pytest.skip("no memfd on this system")
    return area


def test_the_locked_prefix_grows_by_doubling_and_is_released(calls):
    area = _area()
    area.pin(100)
    area.pin(200 * MiB)  # inside the locked prefix: nothing to do
    assert [c[0] for c in calls] == ["register"] and calls[0][2] == 256 * MiB
    base = calls[0][1]
    area.pin(300 * MiB)  # grows to twice the prefix, re-registered from the start
    assert calls[1:] == [("unregister", base), ("register", base, 512 * MiB)]
    area.pin(1200 * MiB)  # past twice: to the step above the end
    assert calls[-1] == ("register", base, 1280 * MiB)
    area.close()
    assert calls[-1] == ("unregister", base)


def test_a_hostile_offset_locks_no_more_than_the_limit(calls):
    area = _area()
    area.pin((16 << 30) - 1)
    area.pin(16 << 30)
    assert [c[2] for c in calls if c[0] == "register"] == [protocol._PIN_LIMIT]
    area.close()


def test_a_refused_registration_turns_pinning_off(calls):
    area = _area()
    calls.state["refuse"] = True
    area.pin(10 * MiB)
    area.pin(600 * MiB)
    assert [c[0] for c in calls] == ["register"]
    area.close()
    assert [c[0] for c in calls] == ["register"]  # nothing locked, nothing to release


def test_messages_still_round_trip_through_the_area_on_the_cpu():
    import os

    import torch

    area = _area(1 << 30)
    r, w = os.pipe()
    try:
        value = {"outputs": [torch.arange(12, dtype=torch.float32).reshape(3, 4)], "n": 3}
        protocol.send(w, value, area)
        got = protocol.recv(r, 1 << 30, area=area, device="cpu")
        assert got["n"] == 3 and torch.equal(got["outputs"][0], value["outputs"][0])
        assert area._pinned == 0  # CPU tensors never lock pages
    finally:
        os.close(r)
        os.close(w)
        area.close()
