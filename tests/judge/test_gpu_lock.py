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


def test_a_long_reader_steps_aside_for_a_waiting_writer(tmp_path):
    """A reader stuck in a slow request lets a queued measurement through, then takes its share back."""
    base = str(tmp_path / "gpu0")
    log, stepped = [], threading.Event()

    def slow_reader():
        with file_rw_lock(base, False) as hold:
            log.append(("in", "r", time.monotonic()))
            assert not hold.writer_waiting()
            deadline = time.monotonic() + 5
            while not hold.writer_waiting():
                assert time.monotonic() < deadline, "the writer never queued"
                time.sleep(0.01)
            log.append(("out", "r", time.monotonic()))
            hold.step_aside()
            log.append(("in", "r2", time.monotonic()))
            stepped.set()
            time.sleep(0.1)
            log.append(("out", "r2", time.monotonic()))

    reader = threading.Thread(target=slow_reader)
    reader.start()
    time.sleep(0.1)
    writer = threading.Thread(target=_hold, args=(base, True, log, "w", 0.3))
    writer.start()
    for t in (reader, writer):
        t.join(timeout=10)
    assert stepped.is_set()
    spans = _intervals(log)
    w0, w1 = spans["w"]
    assert spans["r"][1] <= w0, "the writer measured while the reader still held its share"
    assert spans["r2"][0] >= w1, "the reader took its share back during the measurement"
