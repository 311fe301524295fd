"""Operating-system confinement of the candidate process, applied right before the answer is imported.

Python-level guards leak (DESIGN.md, "Record, then replay"), so the process that runs answer code is
also confined by the kernel, wherever the machine allows it. Each layer is independent and
best-effort: one the machine cannot provide is reported in `Confinement.missing` with the reason,
and the candidate still runs. In the order applied:

- `no_new_privs`: no exec can gain privileges (setuid binaries, file capabilities).
- `netns`: a new, empty network namespace (no interfaces up, not even loopback): no network.
- `landlock`: file-system writes only under the scratch dir (and the GPU and null devices);
  with Landlock ABI >= 4 no TCP bind/connect; with ABI >= 6 no signals to and no abstract unix
  sockets of processes outside the candidate. Landlock also denies ptrace-style access
  (/proc/PID/mem, environ, fd targets) to processes outside the candidate's domain.
- `uid`: when root, a per-candidate unprivileged uid/gid (the scratch dir is chowned to it first):
  no signals to, /proc reads of, or writes into anything of the judge's.
- `caps`: every capability dropped, the bounding set emptied (nothing exec'd regains them).
- `seccomp`: ptrace, setsid, setpgid, process_vm_readv/writev, pidfd_getfd, io_uring and socket() of any family
  (AF_UNIX too: red-team round s20) fail with EPERM/EAFNOSUPPORT, on every thread of the process.

Namespaces, no_new_privs and Landlock apply to the calling thread and the threads and processes it
starts afterwards: the answer runs in this thread. Threads started before (torch's CPU pool) keep
the earlier state; seccomp's TSYNC gives them no_new_privs and the filter.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import stat
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelgym.judge.candidate_env import CONFINE_VAR

UID_BASE = 200_000  # candidate uid = UID_BASE + pid: distinct for every live candidate (pid_max <= 2**22)
NOBODY = 65534


@dataclass
class Confinement:
    """What `confine` put in place: active layer names, and why each other layer is missing."""

    layers: list[str] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)
    uid: int | None = None  # the candidate's uid after `uid`, else None
    seconds: float = 0.0  # what confining took

    def as_reply(self) -> dict:
        return {"layers": list(self.layers), "missing": dict(self.missing), "seconds": round(self.seconds, 6)}


def confine_candidate(code_path: str, device: str) -> tuple[str, Confinement]:
    """Confine a candidate process started by the sandbox (its scratch dir is its cwd), as the
    parent's switch says; the answer's path to import, copied into the scratch dir when it lies
    outside (a warm process's answer is written in the judge's dir, which its uid cannot read)."""
    switch = os.environ.get(CONFINE_VAR)
    if switch is None:  # a `_Session` driven directly (tests): nothing here is a scratch dir to confine to
        return code_path, confine(Path.cwd(), enabled=False, why=f"not a sandboxed candidate ({CONFINE_VAR} unset)")
    scratch = Path.cwd().resolve()
    if switch == "1" and Path(code_path).resolve().parent != scratch:
        staged = scratch / Path(code_path).name
        staged.write_bytes(Path(code_path).read_bytes())
        code_path = str(staged)
    return code_path, confine(scratch, gpu=device != "cpu", enabled=switch == "1")


def confine(scratch: Path, gpu: bool = False, enabled: bool = True, why: str = "") -> Confinement:
    """Confine this process (and what it starts) to `scratch`; `gpu`: the answer needs /dev/nvidia*.
    Never raises for a layer the machine refuses: it lands in `missing` with the reason."""
    result = Confinement()
    if not enabled:
        result.missing = {name: why or f"turned off ({CONFINE_VAR}=0 in the judge)" for name in _LAYERS}
        return result
    started = time.perf_counter()
    scratch = scratch.resolve()
    _step(result, "no_new_privs", _no_new_privs)
    _step(result, "netns", _new_netns)
    plan = _uid_plan(scratch, gpu)  # chown needs root: before any privilege is dropped
    _step(result, "landlock", lambda: _landlock(scratch, gpu))
    if isinstance(plan, str):
        result.missing["uid"] = plan
    else:
        _step(result, "uid", lambda: _drop_uid(result, *plan))
    _step(result, "caps", _drop_caps)
    _step(result, "seccomp", _seccomp)
    result.seconds = time.perf_counter() - started
    return result


_LAYERS = ("no_new_privs", "netns", "landlock", "uid", "caps", "seccomp")


def _step(result: Confinement, name: str, apply) -> None:  # noqa: ANN001
    try:
        apply()
    except OSError as e:
        result.missing[name] = f"{e.strerror or e}" + (f" ({errno.errorcode.get(e.errno, e.errno)})" if e.errno else "")
        return
    except _Unsupported as e:
        result.missing[name] = str(e)
        return
    result.layers.append(name)


class _Unsupported(Exception):
    """The machine lacks what a layer needs (not an error of a call)."""


_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
_X86_64 = platform.machine() == "x86_64"


def _check(rc: int) -> int:
    if rc < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return rc


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    return _check(_libc.prctl(option, arg2, arg3, 0, 0))


# -- no_new_privs, netns, caps ----------------------------------------------------------------------
_PR_SET_NO_NEW_PRIVS, _PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4
_PR_SET_PDEATHSIG, _PR_GET_PDEATHSIG = 1, 2
_CLONE_NEWNET = 0x40000000


def _no_new_privs() -> None:
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)


def _new_netns() -> None:
    _check(_libc.unshare(_CLONE_NEWNET))


def _drop_caps() -> None:
    """Empty the bounding set (needs CAP_SETPCAP, so only while we have it), the ambient set, and
    the effective, permitted and inheritable sets; fails unless no capability is left."""
    if _cap_sets() != (0, 0):
        last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
        for cap in range(last + 1):
            _prctl(_PR_CAPBSET_DROP, cap)
        _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL)
        header = struct.pack("Ii", 0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        data = ctypes.create_string_buffer(24)  # two all-zero __user_cap_data_struct
        _check(_libc.capset(ctypes.c_char_p(header), data))
    if _cap_sets() != (0, 0):
        raise _Unsupported("capabilities still held after capset")


def _cap_sets() -> tuple[int, int]:
    fields = dict(line.split(":\t", 1) for line in Path("/proc/thread-self/status").read_text().splitlines()
                  if line.startswith("Cap"))
    return int(fields["CapEff"], 16), int(fields["CapPrm"], 16)


# -- uid ----------------------------------------------------------------------------------------------
def _uid_plan(scratch: Path, gpu: bool) -> tuple[int, list[int], Path] | str:
    """(uid, supplementary groups, scratch) to drop to, after chowning the scratch dir to it; or why
    not: not root, or a path the candidate needs (the Python installation, the GPU) would be out of
    reach of an unprivileged uid."""
    if os.geteuid() != 0:
        return f"not root: already runs as uid {os.geteuid()}"
    unreadable = _unreadable_python()
    if unreadable:
        return f"the Python installation is not readable by other users ({unreadable})"
    closed = _closed_ancestor(scratch)
    if closed:
        return f"the scratch dir is not reachable by other users ({closed})"
    groups = []
    if gpu:
        for dev in _gpu_devices():
            mode = os.stat(dev).st_mode
            if mode & 0o006 == 0o006:
                continue
            if mode & 0o060 != 0o060:
                return f"{dev} is mode {stat.filemode(mode)}: an unprivileged uid could not use the GPU"
            groups.append(os.stat(dev).st_gid)
    uid = UID_BASE + os.getpid()
    try:
        _chown_tree(scratch, uid)
    except OSError as e:
        return f"cannot chown the scratch dir: {e}"
    return uid, sorted(set(groups)), scratch


def _unreadable_python() -> str:
    """The first directory of the interpreter's installation and import path that a uid other
    than its owner cannot read or traverse (by the mode bits), or ''."""
    roots = {Path(p).resolve() for p in (sys.base_prefix, sys.prefix, sys.exec_prefix, *sys.path)
             if p and os.path.isdir(p)}
    for root in sorted(roots):
        closed = _closed_ancestor(root)
        if closed:
            return closed
        if os.stat(root).st_mode & 0o005 != 0o005:
            return f"{root} is {stat.filemode(os.stat(root).st_mode)}"
    return ""


def _closed_ancestor(path: Path) -> str:
    """The first directory above `path` that other users cannot traverse, as 'DIR is MODE', or ''."""
    for d in reversed(path.parents):
        mode = os.stat(d).st_mode
        if not mode & 0o001:
            return f"{d} is {stat.filemode(mode)}"
    return ""


def _gpu_devices() -> list[str]:
    try:
        names = os.listdir("/dev")
    except OSError:
        return []
    return sorted(f"/dev/{n}" for n in names if n.startswith("nvidia") and stat.S_ISCHR(os.stat(f"/dev/{n}").st_mode))


def _chown_tree(scratch: Path, uid: int) -> None:
    """Give the scratch dir to `uid`; the files the parent wrote at its top (the answer) stay the
    parent's but readable, so the candidate can import but not rewrite them."""
    os.chown(scratch, uid, uid)
    for entry in os.scandir(scratch):
        if entry.is_file(follow_symlinks=False):
            os.chmod(entry.path, stat.S_IMODE(entry.stat().st_mode) | 0o444)
        elif entry.is_dir(follow_symlinks=False):
            for dirpath, dirnames, filenames in os.walk(entry.path):
                os.chown(dirpath, uid, uid)
                for name in filenames + dirnames:
                    os.chown(os.path.join(dirpath, name), uid, uid, follow_symlinks=False)


def _drop_uid(result: Confinement, uid: int, groups: list[int], scratch: Path) -> None:
    deathsig = ctypes.c_int(0)
    _check(_libc.prctl(_PR_GET_PDEATHSIG, ctypes.addressof(deathsig), 0, 0, 0))
    os.setgroups(groups)
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    result.uid = uid
    if deathsig.value:  # the kernel clears it when the uid changes (a forked candidate dies with its server)
        _prctl(_PR_SET_PDEATHSIG, deathsig.value)


# -- landlock -----------------------------------------------------------------------------------------
_SYS_LANDLOCK = (444, 445, 446)  # create_ruleset, add_rule, restrict_self: the same on every arch
_FS_WRITE = sum(1 << b for b in (1, 4, 5, 6, 7, 8, 9, 10, 11, 12))  # WRITE_FILE, REMOVE_*, MAKE_*
_FS_REFER, _FS_TRUNCATE = 1 << 13, 1 << 14
_FS_FILE_WRITE = 1 << 1  # WRITE_FILE: the only write right a rule on a single file may grant (+ TRUNCATE)
_NET_TCP = 0b11  # BIND_TCP, CONNECT_TCP
_SCOPES = 0b11  # ABSTRACT_UNIX_SOCKET, SIGNAL
_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _landlock(scratch: Path, gpu: bool) -> None:
    """Writes (create, remove, write, truncate, rename into) only beneath `scratch` and into the
    null and GPU devices; reads and exec everywhere; no TCP; no signals out of the domain."""
    abi = _libc.syscall(_SYS_LANDLOCK[0], None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 0:
        err = ctypes.get_errno()
        raise _Unsupported(f"the kernel has no Landlock ({os.strerror(err)}; "
                           f"LSMs: {_read('/sys/kernel/security/lsm') or 'unknown'})")
    fs = _FS_WRITE | (_FS_REFER if abi >= 2 else 0) | (_FS_TRUNCATE if abi >= 3 else 0)
    attr = _RulesetAttr(fs, _NET_TCP if abi >= 4 else 0, _SCOPES if abi >= 6 else 0)
    size = 8 if abi < 4 else 16 if abi < 6 else 24
    ruleset = _check(_libc.syscall(_SYS_LANDLOCK[0], ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)))
    try:
        _allow(ruleset, str(scratch), fs)
        file_rights = _FS_FILE_WRITE | (_FS_TRUNCATE if abi >= 3 else 0)
        for dev in list(_DEVICES) + (_gpu_devices() if gpu else []):
            if os.path.exists(dev):
                _allow(ruleset, dev, file_rights)
        _check(_libc.syscall(_SYS_LANDLOCK[2], ctypes.c_int(ruleset), ctypes.c_uint32(0)))
    finally:
        os.close(ruleset)


def _allow(ruleset: int, path: str, access: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        rule = _PathBeneathAttr(access, fd)
        _check(_libc.syscall(_SYS_LANDLOCK[1], ctypes.c_int(ruleset), ctypes.c_int(1), ctypes.byref(rule),
                             ctypes.c_uint32(0)))
    finally:
        os.close(fd)


def _read(path: str) -> str:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


# -- seccomp ------------------------------------------------------------------------------------------
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_BIT = 0x40000000
# ptrace, setpgid, setsid, process_vm_readv/writev, io_uring_*, pidfd_getfd. setpgid/setsid: every descendant
# stays in the candidate's process group, which the judge kills and counts when the evaluation ends (RH-27).
_DENIED_X86_64 = (101, 109, 112, 310, 311, 425, 426, 427, 438)
_SYS_SOCKET = 41
_SECCOMP_RET_ALLOW, _SECCOMP_RET_ERRNO = 0x7FFF0000, 0x00050000


def _bpf_program() -> bytes:
    """The filter: another arch or an x32 call -> EPERM; a denied call -> EPERM; socket() of any family ->
    EAFNOSUPPORT; anything else allowed. (struct sock_filter: u16 code, u8 jt, u8 jf, u32 k.)

    The candidate needs no socket of its own (its channels are inherited pipes and socketpairs). AF_UNIX was
    allowed until red-team round s20: a pathname socket of a process outside the candidate (the trusted
    multiprocessing fork server of `kernelgym.tasks.limited`, unauthenticated in Python 3.11) is reachable by
    connect() whenever no uid layer separates the two, and Landlock does not govern connect()."""
    ld_w_abs, jeq_k, jge_k, ret_k = 0x20, 0x15, 0x35, 0x06
    deny, no_family = _SECCOMP_RET_ERRNO | errno.EPERM, _SECCOMP_RET_ERRNO | errno.EAFNOSUPPORT
    n = len(_DENIED_X86_64)
    # Layout: 0 ld arch; 1 jeq arch; 2 ld nr; 3 jge x32; 4..4+n-1 jeq denied; 4+n jeq socket;
    # 5+n allow; 6+n ret EAFNOSUPPORT; 7+n deny
    deny_at = 7 + n
    prog = [(ld_w_abs, 0, 0, 4), (jeq_k, 0, deny_at - 2, _AUDIT_ARCH_X86_64), (ld_w_abs, 0, 0, 0),
            (jge_k, deny_at - 4, 0, _X32_BIT)]
    for i, nr in enumerate(_DENIED_X86_64):
        prog.append((jeq_k, deny_at - (4 + i) - 1, 0, nr))
    prog += [(jeq_k, 1, 0, _SYS_SOCKET), (ret_k, 0, 0, _SECCOMP_RET_ALLOW), (ret_k, 0, 0, no_family),
             (ret_k, 0, 0, deny)]
    return b"".join(struct.pack("HBBI", *ins) for ins in prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _seccomp() -> None:
    if not _X86_64:
        raise _Unsupported(f"the filter is written for x86_64 syscall numbers, not {platform.machine()}")
    code = _bpf_program()
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog): every thread, no_new_privs too.
    rc = _libc.syscall(317, ctypes.c_uint(1), ctypes.c_uint(1), ctypes.byref(prog))
    if rc > 0:
        raise _Unsupported(f"thread {rc} could not be synchronised to the filter")
    _check(rc)
