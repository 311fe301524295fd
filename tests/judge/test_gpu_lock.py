"""The per-GPU readers-writer lock: trials share a GPU, a measurement has it to itself."""

import threading
import time

from kernelgym.judge.timing import file_rw_lock


def _hold(base, exclusive, log, name, release, entered=None, asking=None):
    """Hold the lock until `release` is set; `entered(hold)` once in, `asking` set just before asking."""
    if asking:
        asking.set()
    with file_rw_lock(base, exclusive) as hold:
        log.append(("in", name, time.monotonic()))
        if entered:
            entered(hold)
        assert release.wait(timeout=60), f"{name} was never released"
        log.append(("out", name, time.monotonic()))


def _wait_for(condition, what):
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _intervals(log):
    ins = {n: t for kind, n, t in log if kind == "in"}
    outs = {n: t for kind, n, t in log if kind == "out"}
    return {n: (ins[n], outs[n]) for n in ins}


def test_readers_overlap_and_writer_is_alone(tmp_path):
    base = str(tmp_path / "gpu0")
    log, holds, readers_go, at_once = [], [], threading.Event(), threading.Event()
    at_once.set()  # the writer and the late reader leave as soon as they are in
    readers = [threading.Thread(target=_hold, args=(base, False, log, f"r{i}", readers_go, holds.append))
               for i in range(3)]
    for r in readers:
        r.start()
    _wait_for(lambda: len(holds) == 3, "the readers never all held the lock at once")
    writer = threading.Thread(target=_hold, args=(base, True, log, "w", at_once))
    writer.start()
    _wait_for(holds[0].writer_waiting, "the writer never queued")
    asking = threading.Event()
    late = threading.Thread(target=_hold, args=(base, False, log, "late", at_once, None, asking))
    late.start()
    assert asking.wait(timeout=60)
    time.sleep(0.1)  # room for the late reader to queue; if it is slower, it comes after the writer anyway
    readers_go.set()
    for t in [*readers, writer, late]:
        t.join(timeout=60)
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

    reader_in = threading.Event()

    def slow_reader():
        with file_rw_lock(base, False) as hold:
            log.append(("in", "r", time.monotonic()))
            assert not hold.writer_waiting()
            reader_in.set()
            deadline = time.monotonic() + 60
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
    assert reader_in.wait(timeout=60)
    released = threading.Event()
    released.set()
    writer = threading.Thread(target=_hold, args=(base, True, log, "w", released))
    writer.start()
    for t in (reader, writer):
        t.join(timeout=60)
    assert stepped.is_set()
    spans = _intervals(log)
    w0, w1 = spans["w"]
    assert spans["r"][1] <= w0, "the writer measured while the reader still held its share"
    assert spans["r2"][0] >= w1, "the reader took its share back during the measurement"
