"""The driver's busy share, sampled through `nvidia-smi`: a stand-in `nvidia-smi` on PATH prints
what the real one prints (one line per GPU per sample), so the parsing and windowing are real."""

import os
import stat
import time

from kernelgym.service.gpu_utilization import UtilizationSampler


def fake_smi(tmp_path, monkeypatch, body: str) -> None:
    exe = tmp_path / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + body)
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_two_gpus_per_sample_are_averaged_and_windowed(tmp_path, monkeypatch):
    # two GPUs at 20 % and 60 %, a sample every 50 ms; an [N/A] line is not a sample
    fake_smi(tmp_path, monkeypatch, 'echo "$@" > "$0.args"; echo "[N/A]"\n'
             "while true; do printf '20\\n60\\n'; sleep 0.05; done\n")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    t0 = time.time()
    with UtilizationSampler(interval_ms=50) as sampler:
        deadline = time.time() + 10  # a loaded CI machine may start the loop late
        while len(sampler.samples) < 4 and time.time() < deadline:
            time.sleep(0.05)
    t1 = time.time()
    assert len(sampler.samples) >= 3
    assert abs(sampler.share(t0, t1) - 0.40) < 1e-9
    assert sampler.share(t1 + 10, t1 + 20) is None  # nothing sampled in that window
    args = (tmp_path / "nvidia-smi.args").read_text()
    assert "--loop-ms=50" in args and "--id=0,1" in args and "utilization.gpu" in args


def test_without_nvidia_smi_there_is_no_share(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty directory: no nvidia-smi anywhere
    with UtilizationSampler() as sampler:
        pass
    assert sampler.samples == [] and sampler.share(0.0, time.time()) is None
