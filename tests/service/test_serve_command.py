import pytest

from kernelgym import cli
from kernelgym.service import server


def test_serve_command_passes_its_options_through(monkeypatch, tmp_path):
    seen = {}
    monkeypatch.setattr(server, "serve", lambda **kw: seen.update(kw))
    rc = cli.main(["serve", "--backend", "ray", "--port", "9001", "--db", str(tmp_path / "r.db"), "--jobs", "2",
                   "--devices", "cpu", "--token", "t", "--max-attempts", "5", "--payload-ttl-days", "7"])
    assert rc == 0
    assert seen == {"backend": "ray", "host": "127.0.0.1", "port": 9001, "db": tmp_path / "r.db", "token": "t",
                    "jobs": 2, "devices": "cpu", "max_attempts": 5, "payload_ttl_days": 7.0, "workers_per_device": 1}
    seen.clear()
    assert cli.main(["serve", "--devices", "cpu", "--workers-per-device", "2"]) == 0
    assert seen["workers_per_device"] == 2 and seen["backend"] == "local"


def test_serve_command_refuses_bad_numbers(capsys):
    assert cli.main(["serve", "--jobs", "0"]) == 2
    assert "--jobs must be at least 1" in capsys.readouterr().err
    assert cli.main(["serve", "--workers-per-device", "0"]) == 2
    assert "--workers-per-device must be at least 1" in capsys.readouterr().err
    # several worker processes per device are the local backend's: Ray runs one actor per GPU
    assert cli.main(["serve", "--backend", "ray", "--workers-per-device", "2"]) == 2
    assert "option of the local backend" in capsys.readouterr().err


def test_unknown_backend_and_cpu_gpu_model():
    with pytest.raises(ValueError, match="unknown backend"):
        server.build_backend("slurm")
    assert server.local_gpu_model("cpu") is None
    local = server.build_backend("local", "cpu", 2, workers_per_device=3)  # built, not started
    assert (local.config.jobs_per_worker, local.config.workers_per_device) == (2, 3)


def test_a_backend_that_cannot_start_is_one_line_not_a_traceback(monkeypatch, tmp_path, capsys):
    from kernelgym.service.local_backend import LocalBackend, LocalBackendConfig

    class NoCluster(LocalBackend):  # a backend whose start fails as Ray's does without a cluster
        def start(self):
            raise ConnectionError("Could not find any running Ray instance.")

    monkeypatch.setattr(server, "build_backend", lambda kind, devices, jobs, workers_per_device: NoCluster(LocalBackendConfig(devices=("cpu",))))
    ran = []
    monkeypatch.setattr("uvicorn.run", lambda *a, **k: ran.append(a))
    rc = cli.main(["serve", "--backend", "ray", "--db", str(tmp_path / "r.db")])
    err = capsys.readouterr().err
    assert rc == 2 and not ran
    assert "the ray backend did not start: Could not find any running Ray instance" in err
    assert "launch/ray_head.sh" in err and "Traceback" not in err
