"""The GPUs' own busy share while a benchmark runs, as the driver reports it.

`nvidia-smi`'s `utilization.gpu` is the share of each sample period in which at least one kernel
ran on the GPU. The service bench reports its mean over the measured window beside the lock-based
shares (timing-busy: measurements; held: any of our work holding the GPU): a GPU can be held by a
trial while it runs no kernel (the trial's host side), and only the driver sees the difference.
`nvidia-smi` ships with the driver, so no extra package is needed; without it the share is None.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time


class UtilizationSampler:
    """Samples every `interval_ms` in a background `nvidia-smi` loop; a context manager.

    Only the GPUs in `CUDA_VISIBLE_DEVICES` are sampled when it names them by index or UUID.
    """

    def __init__(self, interval_ms: int = 100, executable: str = "nvidia-smi") -> None:
        self.interval_ms = interval_ms
        self.executable = executable
        self.samples: list[tuple[float, float]] = []  # (time.time(), mean % over the sampled GPUs)
        self._proc: subprocess.Popen[str] | None = None
        self._reader: threading.Thread | None = None

    def __enter__(self) -> "UtilizationSampler":
        path = shutil.which(self.executable)
        if path is None:
            return self
        cmd = [path, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits", f"--loop-ms={self.interval_ms}"]
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").strip()
        if visible:
            cmd.append(f"--id={visible}")
        try:
            self._proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return self
        self._reader = threading.Thread(target=self._read, name="gpu-utilization", daemon=True)
        self._reader.start()
        return self

    def _read(self) -> None:
        # One line per GPU per sample; a sample's lines arrive together, so lines read within a
        # few milliseconds of each other are one sample.
        pending: list[float] = []
        last = 0.0
        assert self._proc is not None and self._proc.stdout is not None
        for line in self._proc.stdout:
            now = time.time()
            try:
                value = float(line.strip())
            except ValueError:
                continue  # "[N/A]" or a message: not a sample
            if pending and now - last > 0.02:
                self.samples.append((last, sum(pending) / len(pending)))
                pending = []
            pending.append(value)
            last = now
        if pending:
            self.samples.append((last, sum(pending) / len(pending)))

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._reader is not None:
            self._reader.join(timeout=5)

    def share(self, t0: float, t1: float) -> float | None:
        """Mean busy share (0-1) of the samples taken between t0 and t1; None without samples."""
        xs = [v for t, v in list(self.samples) if t0 <= t <= t1]
        return sum(xs) / len(xs) / 100.0 if xs else None
