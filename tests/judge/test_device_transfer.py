"""The device path between the replay process and the parent (`device_transfer`), on the CPU with
stand-ins for CUDA: what travels how, what is refused, and that every failure ends on the area."""

from __future__ import annotations

import mmap
import os
import threading
import time

import pytest
import torch

from kernelgym.judge import device_transfer, protocol
from kernelgym.judge.child import host_copy, ship_outputs
from kernelgym.judge.pinned_hold import HoldPool, changed_holds, output_meta
from kernelgym.judge.sandbox import CandidateProcess


class _Sharer:
    """Stands in for `device_transfer.Sharer`: 'shares' tensors it is told to by keeping them."""

    def __init__(self, which=lambda t: t.numel() >= 100):
        self.kept: dict[bytes, torch.Tensor] = {}
        self.which = which

    def share(self, t):
        if not self.which(t):
            return None
        handle = os.urandom(8)
        self.kept[handle] = t
        return [0, handle, t.untyped_storage().nbytes(), 0, t.storage_offset(), list(t.stride()), "GPU-test"]


class _Link:
    """Stands in for `device_transfer.DeviceLink`: 'opens' what `_Sharer` kept, or fails."""

    def __init__(self, sharer, fail=False):
        self.sharer, self.fail, self.opened = sharer, fail, 0

    def open_all(self, entries):
        if self.fail:
            raise protocol.DeviceTransferFailed("cudaIpcOpenMemHandle: invalid argument (stand-in)")
        out = []
        for dtype, shape, desc in entries:
            t = self.sharer.kept[desc[1]]
            assert t.dtype == dtype and list(t.shape) == shape
            out.append(t.clone().contiguous())
        self.opened += len(out)
        return out


def _wire(obj, area=None, share=None):
    """The bytes `send` writes to the pipe, and the area's bytes after it."""
    r, w = os.pipe()
    protocol.widen(w)
    protocol.send(w, obj, area, share)
    os.close(w)
    data = b""
    while chunk := os.read(r, 1 << 20):
        data += chunk
    os.close(r)
    return data, (bytes(area.view(0, area.capacity).numpy()) if area is not None else b"")


def _roundtrip(obj, area, share=None, link=None):
    r, w = os.pipe()
    protocol.widen(w)
    box = {}

    def read():
        try:
            box["msg"] = protocol.recv(r, 1 << 30, None, None, area, "cpu", link)
        except Exception as e:  # noqa: BLE001
            box["error"] = e

    t = threading.Thread(target=read)
    t.start()
    protocol.send(w, obj, area, share)
    t.join(timeout=30)
    os.close(w)
    return box, r


def _message():
    return {"outputs": [torch.randn(40, 30), torch.arange(10), torch.empty(0, 2)], "layout": [None], "n": 1}


def test_without_a_descriptor_the_wire_is_todays():
    """No sharer, a sharer that declines every tensor: the same bytes on the pipe and in the area, and no
    `ipc` key (a parent without a link reads it as before)."""
    torch.manual_seed(0)
    msg = _message()
    for area_size in (0, 1 << 20):  # the pipe, then the area
        runs = []
        for share in (None, _Sharer(which=lambda t: False).share):
            area = protocol.OutputArea.create(area_size) if area_size else None
            runs.append(_wire(msg, area, share))
            if area is not None:
                area.close()
        assert runs[0] == runs[1]
        (length,) = protocol._HEADER.unpack(runs[0][0][:8])
        assert "ipc" not in protocol.decode(runs[0][0][8:8 + length])


def test_device_entries_go_through_the_link_and_the_rest_through_the_area():
    sharer = _Sharer()
    link = _Link(sharer)
    area = protocol.OutputArea.create(1 << 20)
    msg = _message()
    box, r = _roundtrip(msg, area, sharer.share, link)
    os.close(r)
    got = box["msg"]
    assert link.opened == 1 and len(sharer.kept) == 1  # only the 1200-element tensor was large enough
    for a, b in zip(got["outputs"], msg["outputs"]):
        assert torch.equal(a, b)
    area.close()


def test_a_device_entry_from_a_process_without_a_link_is_a_violation():
    """The answer's recording process is never given a link: it cannot make the parent open handles."""
    sharer = _Sharer()
    box, r = _roundtrip(_message(), None, sharer.share, link=None)
    os.close(r)
    assert isinstance(box.get("error"), protocol.ChannelViolation)


def test_an_open_failure_leaves_the_channel_in_sync():
    """Device entries are opened after every pipe byte is read: the next message reads cleanly."""
    sharer = _Sharer()
    msg = {"a": torch.randn(200), "b": torch.randn(50)}  # b travels inline through the pipe
    r, w = os.pipe()
    protocol.widen(w)
    protocol.send(w, msg, None, sharer.share)
    protocol.send(w, {"after": torch.ones(3)})
    with pytest.raises(protocol.DeviceTransferFailed):
        protocol.recv(r, 1 << 30, None, None, None, "cpu", _Link(sharer, fail=True))
    assert torch.equal(protocol.recv(r, 1 << 30)["after"], torch.ones(3))
    os.close(r)
    os.close(w)


def _parent_side(link):
    """A `CandidateProcess` reduced to its channel, with `link`."""
    proc = object.__new__(CandidateProcess)
    to_child_r, proc._to_child = os.pipe()
    proc._from_child, from_child_w = os.pipe()
    protocol.widen(from_child_w)
    proc.area = protocol.OutputArea.create(1 << 20)
    proc.device, proc.link, proc.transfer_note = "cpu", link, ""
    proc.max_message_bytes, proc.deadline = 1 << 30, time.monotonic() + 30
    proc._idle_since, proc.transfer_seconds = None, 0.0
    return proc, to_child_r, from_child_w


def test_the_parent_asks_again_through_the_area_when_opening_fails():
    """The replay keeps its last reply; the parent's `resend` brings it through the area, and the
    process's link is dropped with the reason."""
    sharer = _Sharer()
    proc, to_child_r, from_child_w = _parent_side(_Link(sharer, fail=True))
    reply = {"outputs": [torch.randn(300)], "ok": True}

    def replay():
        protocol.send(from_child_w, reply, proc.area, sharer.share)
        assert protocol.recv(to_child_r, 1 << 20)["op"] == "resend"
        protocol.send(from_child_w, reply, proc.area)  # the child loop's `resend`: the same reply, no sharer

    t = threading.Thread(target=replay)
    t.start()
    got = proc.receive()
    t.join(timeout=30)
    assert torch.equal(got["outputs"][0], reply["outputs"][0]) and got["ok"] is True
    assert proc.link is None and "invalid argument" in proc.transfer_note
    for fd in (to_child_r, from_child_w, proc._to_child, proc._from_child):
        os.close(fd)
    proc.area.close()


def _link(uuid="GPU-a", index=0):
    link = object.__new__(device_transfer.DeviceLink)
    link.device, link.uuid, link.opened = torch.device("cuda", index), uuid, 0
    return link


@pytest.mark.parametrize("desc", [
    [0, b"h", 64, 0, 0, [1], "GPU-b"],  # another GPU by uuid
    [1, b"h", 64, 0, 0, [1], ""],  # another GPU by index (no uuid reported)
])
def test_a_handle_from_another_gpu_is_refused_before_anything_opens(desc):
    link = _link(uuid=desc[6] and "GPU-a")
    with pytest.raises(protocol.DeviceTransferFailed, match="another GPU"):
        link.open_all([(torch.float32, [4], desc)])


@pytest.mark.parametrize("desc", [
    [0, b"h", 15, 0, 0, [1], "GPU-a"],  # 4 floats do not fit in 15 bytes
    [0, b"h", 64, 0, 13, [1], "GPU-a"],  # from element 13 they pass byte 64
    [0, b"h", 64, 0, 0, [-1], "GPU-a"],  # negative strides
    [0, "h", 64, 0, 0, [1], "GPU-a"],  # a handle that is not bytes
    [0, b"h", 64, 0, 0, [1]],  # too short
])
def test_descriptors_outside_their_storage_or_malformed_are_refused(desc):
    with pytest.raises(protocol.DeviceTransferFailed):
        _link().open_all([(torch.float32, [4], desc)])


def test_a_failed_first_contact_turns_the_device_path_off_for_the_process(monkeypatch):
    monkeypatch.setattr(device_transfer, "_STATE", {})
    monkeypatch.setattr(device_transfer, "_first_contact", lambda parsed: ("probe subprocess timed out", ""))
    assert device_transfer.usable("cuda:0")
    with pytest.raises(protocol.DeviceTransferFailed, match="timed out"):
        _link(uuid="").open_all([(torch.float32, [4], [0, b"h", 64, 0, 0, [1], ""])])
    assert not device_transfer.usable("cuda:0")

    from kernelgym.judge.config import JudgeConfig
    from kernelgym.judge.replay_judge import _offer_device_path
    from kernelgym.judge.result import EvalResult, Status

    proc = object.__new__(CandidateProcess)
    proc.link, proc.transfer_note = None, ""
    _offer_device_path(proc, JudgeConfig(device="cuda:0"), EvalResult(Status.OK, device="cuda:0"))
    assert proc.link is None and "unusable" in proc.transfer_note


def test_the_sharer_releases_its_counters_on_the_next_request():
    counters = mmap.mmap(-1, device_transfer._COUNTERS_AT + 8 * 16)
    for slot in (3, 7):
        at = device_transfer._COUNTERS_AT + 8 * slot
        counters[at:at + 8] = (1).to_bytes(8, "little")
    sharer = object.__new__(device_transfer.Sharer)
    sharer._counters, sharer._pending = counters, [3, 7]
    assert device_transfer._counter(counters, 3) == 1
    sharer.release()
    assert device_transfer._counter(counters, 3) == device_transfer._counter(counters, 7) == 0
    assert sharer._pending == []


def test_fingerprints_see_any_change_and_not_the_layout():
    x = torch.randn(64, 33)
    key = 0x1234_5678_9ABC
    fp = device_transfer.fingerprint(x, key)
    assert device_transfer.fingerprint(x.t().contiguous().t(), key) == fp  # another layout, same elements
    assert device_transfer.fingerprint(x, key + 2) != fp
    bits = x.clone().view(torch.int32)
    bits[17, 5] ^= 1  # one bit
    assert device_transfer.fingerprint(bits.view(torch.float32), key) != fp
    odd = torch.arange(7, dtype=torch.uint8)  # not a whole number of words
    assert device_transfer.fingerprint(odd, key) != device_transfer.fingerprint(odd.flip(0), key)


def test_device_holds_are_fingerprinted_and_a_rewrite_is_found():
    """`place="device"` (here on the CPU): each hold carries the fingerprints of its buffers, and the
    parent finds a held output rewritten after its call."""
    out = (torch.randn(8, 8), 3)
    pool = HoldPool(host_copy)
    assert pool.allocate(output_meta(ship_outputs(out)), 2, "device", "cpu") == 2 and pool.place == "device"
    pool.key = 99
    held = [pool.hold(ship_outputs((torch.randn(8, 8), 3))) for _ in range(2)]
    reply = {"outputs": [h["outputs"] for h in held], "fingerprints": [h["fingerprints"] for h in held],
             "spots": [[5, held[1]["outputs"], held[1]["layout"], held[1]["fingerprints"]]]}
    assert held[0]["fingerprints"][1] is None and changed_holds(reply, 99) == []
    held[1]["outputs"][0][2, 2] += 1.0  # a later kernel repairs (or spoils) what was kept
    assert changed_holds(reply, 99) == ["the last call on input set 1", "timed call 5"]


def test_only_torch_counter_files_are_removed(tmp_path, monkeypatch):
    removed = []
    monkeypatch.setattr(os, "unlink", lambda path: removed.append(path))
    for name in ("/torch_123_456", "/../etc/passwd", "/torch_1_2/../x", None, "/kernelgym-outputs"):
        device_transfer.remove_counters(name)
    assert removed == ["/dev/shm/torch_123_456"]


def test_every_bit_of_a_fingerprint_depends_on_the_whole_key():
    """Red-team ipc: with one arithmetic shift and the key's multiplication last, the low bits of a
    digest depended only on the low key bits (flipping key bit 50 or 62 left the low 12 bits as they
    were), so a kernel that read a digest out of freed memory could recover the key bit by bit."""
    import random

    rng = random.Random(7)
    unchanged = 0
    for _ in range(40):
        x, key = torch.randn(257), rng.getrandbits(63)
        for bit in (40, 50, 62):
            unchanged += (device_transfer.fingerprint(x, key) & 0xFFFF) == (
                device_transfer.fingerprint(x, key ^ (1 << bit)) & 0xFFFF)
    assert unchanged <= 1  # by chance: 120 tries at 2**-16


def test_an_out_of_memory_copy_leaves_the_device_path_on(monkeypatch):
    """The parent's copies are as large as the answer's outputs: running out of GPU memory for them sends
    this reply through the area and does not turn the device path off for the whole process."""
    key = device_transfer._key(torch.device("cuda", 0))
    monkeypatch.setattr(device_transfer, "_STATE", {key: ""})

    def oom(self, *parsed):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 4.00 GiB (stand-in)")

    monkeypatch.setattr(device_transfer.DeviceLink, "_copy", oom)
    with pytest.raises(protocol.DeviceTransferFailed, match="out of GPU memory"):
        _link(uuid="").open_all([(torch.float32, [4], [0, b"h", 64, 0, 0, [1], ""])])
    assert device_transfer.usable("cuda:0")


@pytest.mark.parametrize("fail", [False, True])
def test_the_parents_device_seconds_are_not_the_answers(fail):
    """Opening device entries (a first contact's probe subprocess takes seconds) happens while the replay
    waits: the answer's deadline moves by as much, whether the entries open or the area is asked for."""
    sharer = _Sharer()

    class _SlowLink(_Link):
        def open_all(self, entries):
            time.sleep(0.3)
            return super().open_all(entries)

    proc, to_child_r, from_child_w = _parent_side(_SlowLink(sharer, fail=fail))
    reply = {"outputs": [torch.randn(300)]}

    def replay():
        protocol.send(from_child_w, reply, proc.area, sharer.share)
        if fail:
            assert protocol.recv(to_child_r, 1 << 20)["op"] == "resend"
            protocol.send(from_child_w, reply, proc.area)

    t = threading.Thread(target=replay)
    t.start()
    before = proc.deadline
    got = proc.receive()
    t.join(timeout=30)
    assert torch.equal(got["outputs"][0], reply["outputs"][0])
    assert proc.deadline - before >= 0.3
    for fd in (to_child_r, from_child_w, proc._to_child, proc._from_child):
        os.close(fd)
    proc.area.close()
