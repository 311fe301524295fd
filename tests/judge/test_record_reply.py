"""What the answer's process sends back is untrusted: a forged record reply or an oversized message is
the answer's verdict, never an exception in the trusted judge (one answer cannot stop a batch)."""

import os

import pytest
import torch

from kernelgym.judge import protocol
from kernelgym.judge.replay_judge import _parsed_record, _Stop
from kernelgym.judge.result import EvalResult, Status
from kernelgym.judge.trace import TRACE_VERSION


def _trace() -> dict:
    return {"version": TRACE_VERSION, "buffers": [{"kind": "input", "index": 0, "nbytes": 16}], "entries": [],
            "outputs": None, "is_sequence": False, "torch_compute": [], "host_reads": [], "unreplayable": []}


@pytest.mark.parametrize("reply", [
    {"trace": [0], "kernels": [], "state": []},
    {"trace": _trace(), "kernels": [], "state": [[0, "not a tensor"]]},
    {"trace": _trace(), "kernels": []},
    {"trace": _trace(), "kernels": "x", "state": []},
    {"trace": {**_trace(), "entries": "x"}, "kernels": [], "state": []},
], ids=["trace-list", "state-value", "no-state", "kernels-str", "entries-str"])
def test_a_forged_record_reply_is_the_answers_crash(reply):
    result = EvalResult(Status.OK, task_id="t")
    with pytest.raises(_Stop):
        _parsed_record(reply, result)
    assert result.status is Status.CRASHED and result.fault == "protocol_violation", result.message


def test_a_well_formed_reply_comes_back_normalised():
    reply = {"trace": {**_trace(), "torch_compute": "abc"}, "kernels": [], "state": [[0, torch.zeros(4)]]}
    trace = _parsed_record(reply, EvalResult(Status.OK, task_id="t"))
    assert trace.torch_compute == [] and reply["trace"]["torch_compute"] == []


def test_a_message_skeleton_over_the_cap_is_refused_before_it_is_read():
    r, w = os.pipe()
    try:
        os.write(w, protocol._HEADER.pack(protocol.MAX_SKELETON_BYTES + 1))
        with pytest.raises(protocol.ChannelViolation, match="without its tensors"):
            protocol.recv(r, 4 << 30, deadline=None)
    finally:
        os.close(r)
        os.close(w)
