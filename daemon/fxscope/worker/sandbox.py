"""The OS sandbox around every piece of user code the worker runs.

On Linux with Landlock (5.13+), the zygote restricts itself before it imports any workspace code
(``preload``, the workspace's libraries, the warm-up): it may write only under its scratch
directory, to ``/dev/null`` and under ``/dev/shm`` (POSIX semaphores), and, from Landlock ABI 4, make no TCP connection or bind. Each job's
child adds a layer of its own (Landlock layers stack and are inherited across ``fork``) that allows
writes only under the job's temporary directory (and those two). Reads stay allowed. Where Landlock is missing, the
zygote enters a new user namespace with a network namespace of its own, whose only interface is a
loopback that is down: connections fail, writes are not contained. Where neither is available, or
when the workspace turned it off (``sandbox = false``, ``--no-sandbox``), user code runs
unsandboxed; the status says which, and the front ends show it.

The Landlock calls are a small ctypes layer over its three system calls (their numbers are the
same on every architecture), so the zygote, which runs in the workspace's interpreter, needs no
package of its own there.

A blocked action is attributed precisely: an audit hook in the job's child records the writes
(``open`` for writing, ``os.mkdir``, ``os.rename``, ...) and TCP connections and binds user code
attempts; :func:`denial_of` then tells whether an exception was the sandbox refusing one of them
(EACCES on a path outside the writable directories that the file permissions would allow, EACCES
from a recorded connect or bind; ENETUNREACH in the network namespace).

For testing only: ``FXSCOPE_SANDBOX_PRETEND_MISSING`` (read by this module alone) makes the worker
behave as on a kernel without Landlock (``landlock``) or without Landlock and user namespaces
(``landlock,user-namespace``).
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import struct
import sys
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from fxscope.model.sandbox import HOW_TO_ALLOW, Denial, SandboxStatus

__all__ = ["CACHE_ENV", "Denial", "HOW_TO_ALLOW", "PRETEND_MISSING_ENV", "begin", "denial_of", "enter_job",
           "expected", "landlock_abi", "off", "record_attempts", "redirect_caches", "restrict_writes", "status"]

#: Testing only: comma-separated mechanisms to treat as missing (``landlock``, ``user-namespace``).
PRETEND_MISSING_ENV = "FXSCOPE_SANDBOX_PRETEND_MISSING"

_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000

# Landlock's filesystem access rights that write (reads and execution are not handled: allowed).
_WRITE_FILE, _REMOVE_DIR, _REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
_MAKE_CHAR, _MAKE_DIR, _MAKE_REG, _MAKE_SOCK, _MAKE_FIFO, _MAKE_BLOCK, _MAKE_SYM = (1 << i for i in range(6, 13))
_REFER, _TRUNCATE = 1 << 13, 1 << 14  # ABI 2, ABI 3
_NET_BIND_TCP, _NET_CONNECT_TCP = 1 << 0, 1 << 1  # ABI 4
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1 << 0, 1 << 1  # ABI 6
_FILE_RIGHTS = _WRITE_FILE | _TRUNCATE  # the write rights that apply to a file (not a directory)


@dataclass
class _State:
    """This process's sandbox, inherited by its forks."""

    status: SandboxStatus
    abi: int = 0  # Landlock ABI in force (0: no Landlock layer)
    netns: bool = False  # in a network namespace without network
    writable: tuple[str, ...] = ()  # directories writes are allowed under (the innermost layer's)


_state = _State(SandboxStatus(False, "none", "not started"))
_libc: Any = None


def _lib() -> Any:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _pretend_missing(mechanism: str) -> bool:
    return mechanism in {m.strip() for m in os.environ.get(PRETEND_MISSING_ENV, "").split(",")}


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is missing or disabled."""
    if not sys.platform.startswith("linux") or _pretend_missing("landlock"):
        return 0
    try:
        libc = _lib()
        libc.syscall.restype = ctypes.c_long
        abi = int(libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION)))
    except (OSError, AttributeError):
        return 0
    return max(abi, 0)  # -1: ENOSYS (no such system call) or EOPNOTSUPP (disabled at boot)


def status() -> SandboxStatus:
    """The sandbox of this process (in a zygote or a job's child)."""
    return _state.status


def off(reason: str) -> SandboxStatus:
    """Run unsandboxed (``reason``: why), and say so."""
    _state.status = SandboxStatus(False, "none", reason)
    _state.abi, _state.netns = 0, False
    return _state.status


def begin() -> SandboxStatus:
    """The zygote's first step, while it is still single-threaded (``unshare`` of a user namespace
    needs that): without Landlock's network rules (ABI < 4), enter a user namespace with an empty
    network namespace. Filesystem rules follow in :func:`restrict_writes`."""
    abi = landlock_abi()
    if abi >= 4:
        _state.status = SandboxStatus(True, "landlock", f"Landlock ABI {abi}")
        _state.abi = 0  # not applied yet
        return _state.status
    why = "Landlock is not available on this kernel" if abi == 0 else f"Landlock ABI {abi} cannot restrict TCP"
    problem = _enter_network_namespace()
    if problem is None:
        _state.netns = True
        if abi:
            detail = (f"Landlock ABI {abi} (no TCP rules before ABI 4); no network: a user namespace without "
                      "network blocks connections")
            _state.status = SandboxStatus(True, "landlock", detail)
        else:
            _state.status = SandboxStatus(True, "user-namespace", f"{why}: network blocked by a user namespace "
                                          "without network; writes are NOT contained")
        return _state.status
    if abi:
        _state.status = SandboxStatus(True, "landlock", f"Landlock ABI {abi}: writes contained; TCP is NOT "
                                      f"restricted (no network rules before ABI 4, and {problem})")
        return _state.status
    return off(f"{why} and {problem}: user code runs unsandboxed")


def _enter_network_namespace() -> str | None:
    """Enter a new user namespace (mapping this user to itself) with a new network namespace;
    None on success, else why not."""
    if not sys.platform.startswith("linux") or _pretend_missing("user-namespace"):
        return "user namespaces are not available"
    uid, gid = os.getuid(), os.getgid()
    try:
        libc = _lib()
        if libc.unshare(ctypes.c_int(_CLONE_NEWUSER | _CLONE_NEWNET)) != 0:
            err = ctypes.get_errno()
            return f"user namespaces are not available ({os.strerror(err)})"
    except (OSError, AttributeError) as exc:
        return f"user namespaces are not available ({exc})"
    for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map", f"{uid} {uid} 1"),
                       ("/proc/self/gid_map", f"{gid} {gid} 1")):
        try:
            with open(path, "w") as fh:
                fh.write(text)
        except OSError:
            pass  # ids then show as the overflow id; the network is gone all the same
    return None


#: Written by every process whatever the directory it may write in: ``/dev/null``, and
#: ``/dev/shm``, where POSIX semaphores and shared memory live (``multiprocessing.Lock()``, a
#: DataLoader's workers, torch.multiprocessing's tensors): refusing them fails imports that plain
#: Python runs, with an error that names no path.
SYSTEM_FILES = ("/dev/null",)
SYSTEM_DIRS = ("/dev/shm",)


def restrict_writes(writable_dirs: Sequence[str], writable_files: Sequence[str] = SYSTEM_FILES) -> SandboxStatus:
    """Add a Landlock layer to this thread (inherited by its forks and new threads): writes only
    under ``writable_dirs`` and :data:`SYSTEM_DIRS`, and to ``writable_files``; TCP connect and
    bind refused (ABI 4+).
    A no-op without Landlock; where it fails, the status says so."""
    if _state.status.kind != "landlock":
        return _state.status
    abi = landlock_abi()
    try:
        _restrict(abi, [*writable_dirs, *SYSTEM_DIRS], writable_files)
    except OSError as exc:
        netns = _state.netns
        if netns:
            _state.status = SandboxStatus(True, "user-namespace", f"Landlock failed ({exc}): network blocked by a "
                                          "user namespace without network; writes are NOT contained")
            return _state.status
        return off(f"Landlock failed ({exc}): user code runs unsandboxed")
    _state.abi = abi
    _state.writable = tuple(os.path.realpath(d) for d in writable_dirs)
    if abi >= 4 and not _state.netns:
        _state.status = SandboxStatus(True, "landlock", f"Landlock ABI {abi}: writes only in each job's temporary "
                                      "directory, no TCP connect or bind")
    return _state.status


def enter_job(job_dir: str) -> None:
    """In a job's child: a Landlock layer allowing writes only under ``job_dir``; the audit hook
    that attributes refusals."""
    if _state.abi:
        try:
            _restrict(_state.abi, [job_dir, *SYSTEM_DIRS], SYSTEM_FILES)
            _state.writable = (os.path.realpath(job_dir),)
        except OSError as exc:  # the zygote's layer still holds: writes stay under its scratch
            print(f"fxscope worker: the job's sandbox layer failed: {exc}", file=sys.stderr)
    record_attempts()


def record_attempts() -> None:
    """Install the audit hook that records what user code tries (once per process tree: hooks
    survive ``fork``), when sandboxed."""
    if _state.status.on and not _recorder.installed:
        sys.addaudithook(_recorder.hook)
        _recorder.installed = True


def _restrict(abi: int, dirs: Iterable[str], files: Iterable[str]) -> None:
    libc = _lib()
    libc.syscall.restype = ctypes.c_long
    fs = (_WRITE_FILE | _REMOVE_DIR | _REMOVE_FILE | _MAKE_CHAR | _MAKE_DIR | _MAKE_REG | _MAKE_SOCK
          | _MAKE_FIFO | _MAKE_BLOCK | _MAKE_SYM)
    if abi >= 2:
        fs |= _REFER
    if abi >= 3:
        fs |= _TRUNCATE
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if abi >= 4 else 0
    scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 8 if abi < 4 else (16 if abi < 6 else 24)
    buf = ctypes.create_string_buffer(attr, len(attr))
    ruleset = int(libc.syscall(_SYS_CREATE_RULESET, buf, ctypes.c_size_t(size), ctypes.c_uint32(0)))
    if ruleset < 0:
        _raise("landlock_create_ruleset")
    try:
        for path, rights in [*((d, fs) for d in dirs), *((f, fs & _FILE_RIGHTS) for f in files)]:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a missing /dev/shm: nothing to allow
            try:
                rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH), rule,
                                ctypes.c_uint32(0)) != 0:
                    _raise(f"landlock_add_rule({path})")
            finally:
                os.close(fd)
        if libc.prctl(ctypes.c_int(_PR_SET_NO_NEW_PRIVS), ctypes.c_ulong(1), ctypes.c_ulong(0), ctypes.c_ulong(0),
                      ctypes.c_ulong(0)) != 0:
            _raise("prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) != 0:
            _raise("landlock_restrict_self")
    finally:
        os.close(ruleset)


def _raise(what: str) -> None:
    err = ctypes.get_errno()
    raise OSError(err, f"{what}: {os.strerror(err)}")


#: Library caches written as a side effect of imports and first calls, redirected into the
#: sandbox's writable directory (a job's temporary directory) when the sandbox is on.
CACHE_ENV = {
    "XDG_CACHE_HOME": "cache", "MPLCONFIGDIR": "matplotlib", "TORCH_HOME": "torch", "HF_HOME": "huggingface",
    "HF_HUB_CACHE": "huggingface/hub", "HF_DATASETS_CACHE": "huggingface/datasets",
    "TORCHINDUCTOR_CACHE_DIR": "torchinductor", "TRITON_CACHE_DIR": "triton",
}


def redirect_caches(directory: str) -> None:
    """Point temporary files and the library caches of :data:`CACHE_ENV` under ``directory`` (only
    while sandboxed: unsandboxed code sees the environment it was given)."""
    import tempfile

    os.environ["TMPDIR"] = directory
    tempfile.tempdir = directory
    if not _state.status.on:
        return
    for name, sub in CACHE_ENV.items():
        os.environ[name] = os.path.join(directory, sub)


# -- attributing refusals ---------------------------------------------------------------------
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {"os.mkdir": 1, "os.rename": 2, "os.remove": 1, "os.rmdir": 1, "os.symlink": 2, "os.link": 2,
                "os.truncate": 1, "os.mkfifo": 1, "os.mknod": 1, "os.utime": 1, "os.chmod": 1}


class _Recorder:
    """The recent write and network attempts of user code (an audit hook; bounded)."""

    def __init__(self) -> None:
        self.installed = False
        self.paths: deque[str] = deque(maxlen=256)
        #: recent TCP connects and binds: (action, address, calling code, its line)
        self.network: deque[tuple[str, str, Any, int]] = deque(maxlen=16)

    def hook(self, event: str, args: tuple[Any, ...]) -> None:
        try:
            self._record(event, args)
        except Exception:  # noqa: BLE001 - an audit hook must never fail the audited call
            pass

    def _record(self, event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.connect" or event == "socket.bind":
            sock, address = args
            family = getattr(sock, "family", None)
            if family in (socket.AF_INET, socket.AF_INET6) and getattr(sock, "type", None) == socket.SOCK_STREAM:
                caller = sys._getframe(2)  # the Python frame that called connect/bind (0: here, 1: hook)
                self.network.append((event[7:], _address(address), caller.f_code, caller.f_lineno))
            return
        if event == "open":
            path, mode, flags = args
            if isinstance(path, (str, bytes)) and (
                    (isinstance(mode, str) and any(c in mode for c in "wax+")) or (flags or 0) & _WRITE_FLAGS):
                self.paths.append(os.fsdecode(path))
        elif event in _PATH_EVENTS:
            for arg in args[:_PATH_EVENTS[event]]:
                if isinstance(arg, (str, bytes)):
                    self.paths.append(os.fsdecode(arg))


def _address(address: Any) -> str:
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return repr(address)


_recorder = _Recorder()


def _writable_in_sandbox(path: str) -> bool:
    real = os.path.realpath(path)
    return any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in _state.writable)


def _permitted_without_sandbox(path: str) -> bool:
    """Whether the file permissions allow writing ``path`` (its nearest existing ancestor for a new
    file): ``access(2)`` is not subject to Landlock."""
    probe = os.path.abspath(path)
    first = True
    while True:
        if os.path.lexists(probe):
            return os.access(probe, os.W_OK) or (not first and os.access(probe, os.W_OK | os.X_OK))
        parent = os.path.dirname(probe)
        if parent == probe:
            return False
        probe, first = parent, False


def denial_of(error: BaseException | None) -> Denial | None:
    """The sandbox refusal behind ``error`` (or the exceptions it was raised from), if it was one."""
    if not _state.status.on:
        return None
    seen = 0
    while error is not None and seen < 8:
        found = _denial(error)
        if found is not None:
            return found
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def _denial(error: BaseException) -> Denial | None:
    if not isinstance(error, OSError):
        return None
    code = error.errno
    if code in (errno.EACCES, errno.EPERM) and _state.abi:
        filename = error.filename if isinstance(error.filename, (str, bytes)) else None
        names = [os.fsdecode(n) for n in (filename, error.filename2) if isinstance(n, (str, bytes))]
        for name in names:
            path = os.path.abspath(name)
            if any(os.path.abspath(p) == path for p in _recorder.paths) and not _writable_in_sandbox(path) \
                    and _permitted_without_sandbox(path):
                return Denial("write", path)
        if not names and code == errno.EACCES and _state.abi >= 4:
            return _network_denial(error)
    if code in (errno.ENETUNREACH, errno.EADDRNOTAVAIL) and _state.netns:
        return _network_denial(error)
    return None


def _network_denial(error: BaseException) -> Denial | None:
    """The connect or bind that raised ``error``: a recorded one made at the line where its
    traceback ends (the call that failed)."""
    tb = error.__traceback__
    if tb is None:
        return None
    while tb.tb_next is not None:
        tb = tb.tb_next
    for action, address, code, line in reversed(_recorder.network):
        if code is tb.tb_frame.f_code and line == tb.tb_lineno:
            netns = _state.status.kind == "user-namespace" or _state.netns
            return Denial(action, address, "a user namespace without network" if netns else "Landlock")
    return None


def expected(enabled: bool) -> SandboxStatus:
    """The sandbox a zygote started now would get, told without starting one (for a run answered
    from the cache, or before the worker is ready); the zygote's ``ready`` message says what it got."""
    if not enabled:
        return SandboxStatus(False, "none", "off by request (sandbox = false in [tool.fxscope], or --no-sandbox)")
    abi = landlock_abi()
    if abi >= 4:
        return SandboxStatus(True, "landlock", f"Landlock ABI {abi}: writes only in each job's temporary directory, "
                                               "no TCP connect or bind")
    userns = _user_namespaces_enabled()
    if abi:
        net = "no network: a user namespace without network" if userns else "TCP is NOT restricted"
        return SandboxStatus(True, "landlock", f"Landlock ABI {abi}: writes contained; {net}")
    if userns:
        return SandboxStatus(True, "user-namespace", "Landlock is not available on this kernel: network blocked by a "
                                                     "user namespace without network; writes are NOT contained")
    return SandboxStatus(False, "none", "Landlock is not available on this kernel and user namespaces are not "
                                        "available: user code runs unsandboxed")


def _user_namespaces_enabled() -> bool:
    """Whether this system lets an unprivileged process create a user namespace (read from its
    settings, without creating one)."""
    if not sys.platform.startswith("linux") or _pretend_missing("user-namespace"):
        return False
    for path, refused in (("/proc/sys/user/max_user_namespaces", "0"),
                          ("/proc/sys/kernel/unprivileged_userns_clone", "0"),
                          ("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1")):
        try:
            with open(path) as fh:
                if fh.read().strip() == refused and (os.getuid() != 0 or path.endswith("max_user_namespaces")):
                    return False
        except OSError:
            continue
    return os.path.exists("/proc/self/ns/user")
