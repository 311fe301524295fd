"""launch/thread_sampler.py (issue 26's host-CPU-by-thread diagnostic) attributes a busy thread of a kernelgym
process to its thread name, apart from the main threads."""

import subprocess
import sys
from pathlib import Path

SAMPLER = Path(__file__).resolve().parents[2] / "launch" / "thread_sampler.py"

# A process whose command line names kernelgym, with one extra thread that burns a fixed amount of its own CPU and
# then stays alive (a thread that ended is not in /proc for the last reading) until stdin closes.
BUSY = """
import sys, threading, time
def burn():
    start = time.thread_time()
    while time.thread_time() - start < 0.4:
        pass
    print("burnt", flush=True)
    sys.stdin.read()
threading.Thread(target=burn).start()
"""


def test_a_busy_thread_is_counted_under_its_name_apart_from_the_main_threads(tmp_path):
    out = tmp_path / "threads.txt"
    sampler = subprocess.Popen([sys.executable, str(SAMPLER), str(out), "120", "0.1"], stdout=subprocess.PIPE, text=True)
    assert sampler.stdout.readline().strip() == "sampling"  # its first reading is taken: all of the burn comes after
    busy = subprocess.Popen([sys.executable, "-c", BUSY, "kernelgym-sampler-test"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert busy.stdout.readline().strip() == "burnt"
        sampler.terminate()  # the sampler reads once more before it writes: the thread is still alive then
        assert sampler.wait(timeout=60) == 0
    finally:
        busy.stdin.close()
        busy.wait(timeout=60)
        sampler.kill()
    text = out.read_text()
    rows = [line.split() for line in text.splitlines()[2:]]
    threads = sum(float(r[-3]) for r in rows if r[0] == "thread")
    assert threads >= 0.35, text  # the burning thread's 0.4 CPU-s (clock ticks of 0.01 s)
    assert any(r[0] == "main" for r in rows), text
