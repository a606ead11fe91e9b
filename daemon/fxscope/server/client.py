"""The daemon's client side: reach the daemon of a workspace, start it on demand (detached, its
output in the log), ask it to check, stop it.

Example::

    report, warnings = check_via_daemon(root, None)
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fxscope import __version__
from fxscope.server.paths import DaemonPaths, daemon_paths, load_config_or_none, secure_directory, sockaddr
from fxscope.server.protocol import DaemonError, NotRunning, encode

__all__ = ["START_TIMEOUT", "check_via_daemon", "describe", "ensure_running", "remove_stale", "request",
           "status", "stop", "stop_quietly"]

START_TIMEOUT = 60.0  # seconds `start` waits for the socket (and the warm worker)
STOP_TIMEOUT = 10.0  # seconds `stop` waits for the daemon to exit
PING_TIMEOUT = 5.0  # seconds a status request may take
LOG_MAX_BYTES = 1 << 20  # the log is rotated (one old copy) at start when larger
_POLL = 0.05

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)


def _connect(path: Path, timeout: float | None) -> socket.socket:
    """A connected socket; :class:`NotRunning` when there is no socket or no listener."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise NotRunning() from None
    except OSError as exc:
        raise DaemonError(f"cannot reach the daemon at {path}: {exc.strerror or exc}") from None
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
        raise NotRunning()  # a leftover file in our own directory: removed as a stale socket
    if not stat.S_ISSOCK(st.st_mode):
        raise DaemonError(f"{path} exists and is not a socket")
    if st.st_uid != os.getuid():
        raise DaemonError(f"{path} belongs to another user; refusing to use it")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with sockaddr(path) as addr:
            sock.connect(addr)
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        raise NotRunning() from None
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot connect to the daemon at {path}: {exc.strerror or exc}") from None
    return sock


def _exchange(sock: socket.socket, message: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(encode(message))
    with sock.makefile("rb") as reader:
        line = reader.readline()
    if not line:
        raise DaemonError("the daemon closed the connection without answering (see its log)")
    try:
        reply = json.loads(line)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DaemonError("the daemon sent a malformed reply") from None
    if not isinstance(reply, dict):
        raise DaemonError("the daemon sent a malformed reply")
    return reply


def request(path: Path, message: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """Send one request to the daemon listening on ``path`` and return its reply.

    Raises :class:`NotRunning` when nothing listens there and :class:`DaemonError` on failures.
    """
    sock = _connect(path, timeout)
    try:
        return _exchange(sock, message)
    except socket.timeout:
        raise DaemonError(f"the daemon at {path} did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise DaemonError(f"lost the connection to the daemon: {exc.strerror or exc}") from None
    finally:
        sock.close()


def remove_stale(path: Path) -> None:
    """Remove a socket nothing listens on, or a regular file at the socket path (both ours; the
    directory is fxscope's own cache directory)."""
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if (stat.S_ISSOCK(st.st_mode) or stat.S_ISREG(st.st_mode)) and st.st_uid == os.getuid():
            os.unlink(path)


def status(paths: DaemonPaths) -> dict[str, Any] | None:
    """The running daemon's status reply, or None when none answers (a stale socket is removed)."""
    try:
        reply = request(paths.socket, {"op": "status"}, timeout=PING_TIMEOUT)
    except NotRunning:
        remove_stale(paths.socket)
        return None
    return reply if reply.get("ok") else None


@contextlib.contextmanager
def _start_lock(paths: DaemonPaths) -> Iterator[None]:
    """Serialise concurrent starters (two ``check --daemon`` at once start one daemon)."""
    import fcntl

    try:
        fd = os.open(paths.start_lock, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:  # e.g. a read-only workspace: one clear line, not an internal error
        raise DaemonError(f"cannot start the daemon in {paths.directory}: {exc.strerror or exc} "
                          "(pass --cache-dir DIR, or check without --daemon)") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _log_tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    tail = [ln.strip() for ln in text.strip().splitlines()[-lines:] if ln.strip()]
    return " | ".join(tail)


def _spawn(root: Path, paths: DaemonPaths, pinned: Path | None, workers: int | None,
           sandbox: bool | None = None) -> subprocess.Popen[bytes]:
    """Start ``python -m fxscope daemon run`` detached, its output appended to the log
    (``sandbox`` False: with ``--no-sandbox``)."""
    command = [sys.executable, "-m", "fxscope", "daemon", "run", "--root", str(root)]
    if pinned is not None:
        command += ["--cache-dir", str(paths.directory)]
    if workers:
        command += ["--workers", str(workers)]
    if sandbox is False:
        command.append("--no-sandbox")
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = _PACKAGE_PARENT + (os.pathsep + path if path else "")
    _rotate_log(paths.log)
    with open(paths.log, "ab") as out:
        os.chmod(paths.log, 0o600)
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=str(root),
            env=env, start_new_session=True, close_fds=True,
        )


def _rotate_log(path: Path) -> None:
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_MAX_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))


def ensure_running(root: Path, paths: DaemonPaths, *, pinned: Path | None = None, workers: int | None = None,
                   wait_worker: bool, sandbox: bool | None = None) -> tuple[dict[str, Any], bool]:
    """The status of the running daemon, starting one first if needed (``sandbox`` False: without
    the OS sandbox); ``(status, started)``."""
    secure_directory(paths.directory)
    with _start_lock(paths):
        current = status(paths)
        if current is not None:
            return current, False
        proc = _spawn(root, paths, pinned, workers, sandbox)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                tail = _log_tail(paths.log)
                raise DaemonError(f"the daemon exited at start-up (code {proc.returncode})"
                                  + (f": {tail}" if tail else f"; see {paths.log}"))
            try:
                current = request(paths.socket, {"op": "status"}, timeout=PING_TIMEOUT)
            except NotRunning:
                current = None
            if current is not None and (not wait_worker or current.get("worker") != "starting"):
                return current, True
            if time.monotonic() > deadline:
                raise DaemonError(f"the daemon did not answer within {START_TIMEOUT:g} s; see {paths.log}")
            time.sleep(_POLL)


def describe(status: dict[str, Any], paths: DaemonPaths) -> str:
    """The one line ``fxscope daemon status`` prints."""
    uptime = float(status.get("uptime", 0))
    up = f"{uptime:.0f}s" if uptime < 120 else f"{uptime / 60:.0f}m" if uptime < 7200 else f"{uptime / 3600:.1f}h"
    checks = int(status.get("checks", 0))
    return (f"fxscope daemon running (pid {status.get('pid')}, root {status.get('root')}, up {up}, "
            f"torch {status.get('torch')}, worker {status.get('worker')}, "
            f"{'' if status.get('sandbox') is None else 'sandbox on, ' if status['sandbox'] else 'sandbox off, '}"
            f"{checks} check{'' if checks == 1 else 's'} served, socket {paths.socket})")


def _wait_gone(paths: DaemonPaths, pid: int | None) -> bool:
    """Wait until the daemon process has exited (or its socket is gone when the pid is unknown)."""
    deadline = time.monotonic() + STOP_TIMEOUT
    while time.monotonic() < deadline:
        if pid is not None:
            if not _pid_alive(pid):
                return True
        elif not paths.socket.exists():
            return True
        time.sleep(_POLL)
    return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie (our own child, not yet reaped) counts as gone
    with contextlib.suppress(OSError):
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return False
    with contextlib.suppress(OSError):
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b") ", 1)[1][:1] != b"Z"
    return True


def stop(paths: DaemonPaths) -> int:
    try:
        reply = request(paths.socket, {"op": "stop"}, timeout=PING_TIMEOUT)
    except NotRunning:
        remove_stale(paths.socket)
        sys.stdout.write("fxscope daemon is not running\n")
        return 0
    pid = reply.get("pid")
    if not _wait_gone(paths, pid if isinstance(pid, int) else None):
        if isinstance(pid, int):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
            if _wait_gone(paths, pid):
                sys.stdout.write(f"fxscope daemon stopped (pid {pid}, terminated)\n")
                return 0
        raise DaemonError(f"the daemon (pid {pid}) did not exit within {STOP_TIMEOUT:g} s")
    sys.stdout.write(f"fxscope daemon stopped (pid {pid})\n")
    return 0


def check_via_daemon(root: Path, paths: list[Path] | None, *, pinned: Path | None = None,
                     workers: int | None = None, graphs: bool = False, shard: tuple[int, int] | None = None,
                     no_cache: bool = False, retry_faults: bool = False) -> tuple[dict[str, Any], list[str]]:
    """Run ``fxscope check`` in the workspace's daemon (started first if it is not running) and
    return ``(report, warnings)``."""
    where = daemon_paths(root, pinned, load_config_or_none(root))
    message = {
        "op": "check",
        "root": str(root),
        "paths": [str(p) for p in paths] if paths else None,
        "graphs": graphs,
        "shard": list(shard) if shard else None,
        "no_cache": no_cache,
        "retry_faults": retry_faults,
        "client": {"version": __version__, "python": sys.executable},
    }
    for attempt in range(3):
        if not where.socket.exists() or attempt:
            ensure_running(root, where, pinned=pinned, workers=workers, wait_worker=False)
        try:
            reply = request(where.socket, message)
        except NotRunning:
            remove_stale(where.socket)
            continue
        if reply.get("stale") and attempt < 2:  # a daemon of another fxscope or interpreter
            with contextlib.suppress(NotRunning, DaemonError):
                stop_quietly(where)
            continue
        if not reply.get("ok"):
            raise DaemonError(str(reply.get("error") or "the daemon could not check"))
        report = reply.get("report")
        if not isinstance(report, dict):
            raise DaemonError("the daemon sent a reply without a report")
        return report, [str(w) for w in reply.get("warnings") or []]
    raise DaemonError(f"could not reach the daemon at {where.socket}; see {where.log}")


def stop_quietly(paths: DaemonPaths) -> None:
    reply = request(paths.socket, {"op": "stop"}, timeout=PING_TIMEOUT)
    pid = reply.get("pid")
    _wait_gone(paths, pid if isinstance(pid, int) else None)
