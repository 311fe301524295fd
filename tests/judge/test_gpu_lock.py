"""The per-GPU readers-writer lock: trials share a GPU, a measurement has it to itself."""

import threading
import time

from kernelgym.judge.timing import file_rw_lock


def _hold(base, exclusive, log, name, seconds, start=None):
    if start:
        start.wait()
    with file_rw_lock(base, exclusive):
        log.append(("in", name, time.monotonic()))
        time.sleep(seconds)
        log.append(("out", name, time.monotonic()))


def _intervals(log):
    ins = {n: t for kind, n, t in log if kind == "in"}
    outs = {n: t for kind, n, t in log if kind == "out"}
    return {n: (ins[n], outs[n]) for n in ins}


def test_readers_overlap_and_writer_is_alone(tmp_path):
    base = str(tmp_path / "gpu0")
    log = []
    readers = [threading.Thread(target=_hold, args=(base, False, log, f"r{i}", 0.3)) for i in range(3)]
    for r in readers:
        r.start()
    time.sleep(0.1)
    writer = threading.Thread(target=_hold, args=(base, True, log, "w", 0.2))
    writer.start()
    time.sleep(0.05)
    late = threading.Thread(target=_hold, args=(base, False, log, "late", 0.1))
    late.start()
    for t in [*readers, writer, late]:
        t.join(timeout=10)
    spans = _intervals(log)
    r_spans = [spans[f"r{i}"] for i in range(3)]
    assert max(s for s, _ in r_spans) < min(e for _, e in r_spans), "readers must hold the lock together"
    w0, w1 = spans["w"]
    for name, (s, e) in spans.items():
        if name != "w":
            assert e <= w0 or s >= w1, f"{name} overlapped the exclusive holder"
    # writer priority: a reader arriving while the writer waits goes after it
    assert spans["late"][0] >= w1
