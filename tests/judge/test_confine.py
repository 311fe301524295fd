"""The candidate's OS confinement (`kernelgym.judge.confine`): each layer a real child reports active
holds (probed from answer code), a layer the machine refuses is reported missing and the child
still runs, and the judge's switch turns it off."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

from kernelgym.judge.confine import _LAYERS
from kernelgym.judge.judge import load_message
from kernelgym.judge.reference import Reference
from kernelgym.judge.sandbox import CandidateProcess
from kernelgym.tasks.loaders import load_builtin

# Import-time probes of the answer: what it could reach outside its scratch dir. Each is harmless if
# it succeeds (signal 0, a read, a write into the test's own dir).
_PROBES = textwrap.dedent('''
    import errno, json, os, socket
    import torch.nn as nn

    def attempt(fn):
        try:
            fn()
            return "ok"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    def connect():
        with socket.create_connection(("127.0.0.1", {port}), timeout=2):
            pass

    def write(path):
        with open(path, "w") as fh:
            fh.write("x")

    ppid = os.getppid()
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
    PROBES = {{
        "kill_parent": attempt(lambda: os.kill(ppid, 0)),
        "parent_environ": attempt(lambda: open(f"/proc/{{ppid}}/environ", "rb").read(1)),
        "parent_mem": attempt(lambda: open(f"/proc/{{ppid}}/mem", "rb").read(1)),
        "connect": attempt(connect),
        "inet_socket": attempt(lambda: socket.socket(socket.AF_INET).close()),
        "unix_socket": attempt(lambda: socket.socket(socket.AF_UNIX).close()),
        "socketpair": attempt(lambda: [s.close() for s in socket.socketpair()]),
        "write_outside": attempt(lambda: write({outside!r})),
        "write_scratch": attempt(lambda: write("mine.txt")),
        "write_triton_cache": attempt(lambda: write(os.path.join(os.environ["TRITON_CACHE_DIR"], "mine"))),
        "no_new_privs": status["NoNewPrivs"].strip(),
        "cap_eff": status["CapEff"].strip(),
    }}
    print("PROBES " + json.dumps(PROBES), flush=True)

    class ModelNew(nn.Module):
        def forward(self, x):
            return x
''')


def _load(tmp_path: Path, answer_dir: Path) -> tuple[dict, dict]:
    """Start a real candidate process, load the probing answer; (load reply, probe results)."""
    listener = socket.create_server(("127.0.0.1", 0))  # reachable from here: a connect fails only if confined
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o777)
    os.chmod(outside, 0o777)  # writable by any uid: only Landlock can stop the write
    answer = answer_dir / "answer_probe.py"
    answer.write_text(_PROBES.format(port=listener.getsockname()[1], outside=str(outside / "escaped")))
    scratch = Path(tempfile.mkdtemp(prefix="kernelgym-"))  # under /tmp like the judge's, reachable by any uid
    try:
        ref = Reference(load_builtin("relu")[0], "full", "cpu", init_seed=1)
        with CandidateProcess(scratch, "cpu", time.monotonic() + 120, 1 << 20, 1 << 24) as child:
            reply = child.request(load_message(ref, answer, "cpu"))
        # The reply and the print travel on different pipes: the print is in the tail only once the
        # drain thread has read it, which on a loaded machine can be after the reply (CI, 2026-11-28).
        child._reader.join(timeout=60)
        tail = child.output_tail()
        assert not (outside / "escaped").exists() or "landlock" not in reply["confinement"]["layers"]
    finally:
        listener.close()
        shutil.rmtree(scratch, ignore_errors=True)
    probes = [line for line in tail.splitlines() if line.startswith("PROBES ")]
    assert probes, (reply, tail)
    return reply, json.loads(probes[-1][len("PROBES "):])


def test_every_layer_is_reported_and_each_active_one_holds(tmp_path):
    judge_dir = tmp_path / "judge"  # the answer outside the scratch dir, as a warm process gets it
    judge_dir.mkdir(mode=0o700)
    reply, probes = _load(tmp_path, judge_dir)
    assert reply.get("ok"), reply
    conf = reply["confinement"]
    assert set(conf["layers"]) | set(conf["missing"]) == set(_LAYERS), conf
    assert not set(conf["layers"]) & set(conf["missing"])
    assert all(isinstance(why, str) and why for why in conf["missing"].values())
    layers = set(conf["layers"])
    if not layers:
        pytest.skip(f"no confinement layer on this machine: {conf['missing']}")
    assert probes["write_scratch"] == "ok" and probes["write_triton_cache"] == "ok", probes  # still works
    if "no_new_privs" in layers:
        assert probes["no_new_privs"] == "1"
    if "caps" in layers:
        assert int(probes["cap_eff"], 16) == 0
    if layers & {"netns", "seccomp"}:
        assert probes["connect"] != "ok", probes
    if "seccomp" in layers:
        assert probes["inet_socket"] == "EAFNOSUPPORT", probes
        # Red-team round s20: a unix socket reaches the trusted fork servers' listeners; a socketpair reaches nothing.
        assert probes["unix_socket"] == "EAFNOSUPPORT" and probes["socketpair"] == "ok", probes
    if "landlock" in layers:
        assert probes["write_outside"] == "EACCES", probes
    if "uid" in layers:
        assert probes["kill_parent"] == "EPERM" and probes["parent_environ"] == "EACCES", probes
    if layers & {"uid", "landlock", "caps"}:
        assert probes["parent_environ"] == "EACCES" and probes["parent_mem"] == "EACCES", probes


def test_landlock_stops_signals_to_the_judge_where_the_kernel_scopes_them(tmp_path):
    from kernelgym.judge.confine import _SYS_LANDLOCK, _libc

    abi = _libc.syscall(_SYS_LANDLOCK[0], None, 0, 1)
    if abi < 6:
        pytest.skip(f"Landlock ABI {abi} has no signal scoping (needs >= 6, Linux 6.12)")
    reply, probes = _load(tmp_path, tmp_path)
    assert "landlock" in reply["confinement"]["layers"], reply["confinement"]
    assert probes["kill_parent"] == "EPERM", probes


def test_the_judges_switch_turns_confinement_off(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELGYM_CONFINE", "0")
    reply, probes = _load(tmp_path, tmp_path)
    assert reply.get("ok"), reply
    assert reply["confinement"]["layers"] == []
    assert all("KERNELGYM_CONFINE=0" in why for why in reply["confinement"]["missing"].values())
    assert probes["write_outside"] == "ok"  # the probes do detect what confinement stops


# Runs `confine` in a fresh interpreter with the layer functions patched as the test says, then
# probes from the confined process. Modules the probes need are imported before the uid changes.
_DIRECT = textwrap.dedent('''
    import errno, json, os, sys
    from pathlib import Path
    from kernelgym.judge import confine as c

    exec(sys.argv[1])  # the test's patch
    scratch = Path.cwd()
    ppid = os.getppid()
    conf = c.confine(scratch, gpu=sys.argv[2] == "gpu")

    def attempt(fn):
        try:
            fn()
            return "ok"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    def write(path):
        with open(path, "w") as fh:
            fh.write("x")

    gpu = sorted(p for p in os.listdir("/dev") if p.startswith("nvidia"))
    print(json.dumps({"layers": conf.layers, "missing": conf.missing, "uid": os.getuid(),
                      "kill_parent": attempt(lambda: os.kill(ppid, 0)),
                      "parent_environ": attempt(lambda: open(f"/proc/{ppid}/environ", "rb").read(1)),
                      "parent_fd": attempt(lambda: os.listdir(f"/proc/{ppid}/fd")),
                      "write_outside": attempt(lambda: write(sys.argv[3])),
                      "write_scratch": attempt(lambda: write(scratch / "triton" / "mine")),
                      "read_answer": attempt(lambda: open(scratch / "answer.py").read()),
                      "gpu_devices": {d: attempt(lambda: os.close(os.open("/dev/" + d, os.O_RDWR))) for d in gpu}}))
''')


def _direct(tmp_path: Path, patch: str, gpu: bool = False) -> dict:
    scratch = Path(tempfile.mkdtemp(prefix="kernelgym-"))
    try:
        (scratch / "triton").mkdir()
        (scratch / "answer.py").write_text("x = 1\n")
        os.chmod(scratch / "answer.py", 0o600)  # the parent's umask may be strict: it must stay readable
        outside = tmp_path / "outside"
        outside.mkdir(exist_ok=True)
        proc = subprocess.run([sys.executable, "-c", _DIRECT, patch, "gpu" if gpu else "cpu", str(outside / "x")],
                              cwd=scratch, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
def test_an_unprivileged_uid_cannot_reach_the_judge(tmp_path):
    """The uid layer alone (Landlock off, the readability check bypassed: the probes use only what
    is imported before the drop), so what it stops is its own doing."""
    patch = "c._unreadable_python = lambda: ''\nc._landlock = lambda scratch, gpu: (_ for _ in ()).throw(c._Unsupported('off'))"
    out = _direct(tmp_path, patch, gpu=os.path.exists("/dev/nvidiactl"))
    assert "uid" in out["layers"], out["missing"]
    assert out["uid"] >= 200_000
    assert out["kill_parent"] == "EPERM"
    assert out["parent_environ"] == "EACCES" and out["parent_fd"] == "EACCES"
    assert out["write_outside"] == "EACCES"
    assert out["write_scratch"] == "ok" and out["read_answer"] == "ok"
    assert all(v == "ok" for v in out["gpu_devices"].values()), out["gpu_devices"]


def test_a_layer_the_machine_refuses_is_reported_and_the_rest_still_apply(tmp_path):
    patch = "def refuse(): raise OSError(1, 'Operation not permitted')\nc._new_netns = refuse"
    out = _direct(tmp_path, patch)
    assert out["missing"]["netns"] == "Operation not permitted (EPERM)"
    assert "netns" not in out["layers"]
    if os.geteuid() == 0:
        assert "no_new_privs" in out["layers"] and "caps" in out["layers"], out
    assert out["write_scratch"] == "ok"


def test_the_uid_layer_says_why_when_the_python_installation_is_closed(tmp_path):
    from kernelgym.judge.confine import _unreadable_python

    out = _direct(tmp_path, "")
    why = _unreadable_python()
    if os.geteuid() == 0 and why:
        assert why in out["missing"]["uid"]
    assert ("uid" in out["layers"]) != ("uid" in out["missing"])
