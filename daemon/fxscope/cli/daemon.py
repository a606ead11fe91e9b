"""``fxscope daemon start|stop|status|run`` and ``fxscope check --daemon``: a warm background daemon.

Like ``dmypy``, the daemon keeps one :class:`~fxscope.engine.Engine` (its worker zygote, which has
imported torch, and its result cache) alive between checks, so a check skips the interpreter and
torch start-up. It listens on a Unix socket in the cache directory (``ROOT/.fxscope_cache/daemon.sock``
or ``--cache-dir``), mode 0600, in a directory that only its owner can write.

Protocol: one JSON object per line each way (UTF-8)::

    {"op": "check", "root": "/ws", "paths": ["/ws/models"], "graphs": false,
     "shard": [1, 4], "no_cache": false}
        -> {"ok": true, "report": {...}, "warnings": ["..."]}
        -> {"ok": false, "error": "pyproject.toml:3: unknown key 'timout' ..."}
    {"op": "status"}  -> {"ok": true, "pid": 123, "root": "/ws", "uptime": 12.5,
                          "torch": "2.13.0", "checks": 4, "worker": "ready", ...}
    {"op": "stop"}    -> {"ok": true, "pid": 123}   (then the daemon exits)

``paths`` null (or empty) checks the whole workspace; ``shard`` is ``[i, n]`` (1-based) or null.
The daemon re-reads ``pyproject.toml`` when it changes (checked on every request).

Example::

    $ fxscope daemon start
    fxscope daemon started (pid 4242, socket .fxscope_cache/daemon.sock)
    $ fxscope check --daemon models/
    $ fxscope daemon stop
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import logging
import os
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fxscope import __version__
from fxscope.cli.main import UsageError

__all__ = ["DaemonError", "check_via_daemon", "command", "daemon_paths", "request"]

log = logging.getLogger("fxscope.daemon")

SOCKET_NAME = "daemon.sock"
PID_NAME = "daemon.pid"
LOG_NAME = "daemon.log"
START_LOCK_NAME = "daemon.start.lock"

START_TIMEOUT = 60.0  # seconds `start` waits for the socket (and the warm worker)
STOP_TIMEOUT = 10.0  # seconds `stop` waits for the daemon to exit
PING_TIMEOUT = 5.0  # seconds a status request may take
LOG_MAX_BYTES = 1 << 20  # the log is rotated (one old copy) at start when larger
_POLL = 0.05
_SUN_PATH_MAX = 100  # a little under the kernel's 108 bytes of sockaddr_un.sun_path

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)


class DaemonError(UsageError):
    """The daemon could not be started or reached: one line, exit 2."""


class _NotRunning(Exception):
    """Nothing listens on the socket (no file, or a stale one)."""


# ---------------------------------------------------------------------------------------------
# locations


class DaemonPaths:
    """Where one workspace's daemon keeps its socket, pid file, log and start lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / SOCKET_NAME
        self.pid = directory / PID_NAME
        self.log = directory / LOG_NAME
        self.start_lock = directory / START_LOCK_NAME


def _cache_dir(root: Path, args: argparse.Namespace, config: Any) -> Path:
    """The cache directory the engine would use (``--cache-dir``, config ``cache-dir``, default)."""
    if getattr(args, "cache_dir", None) is not None:
        return Path(args.cache_dir).resolve()
    if config is not None and config.cache_dir is not None:
        return Path(config.cache_dir)
    return root / ".fxscope_cache"


def daemon_paths(root: Path, args: argparse.Namespace, config: Any = None) -> DaemonPaths:
    """The :class:`DaemonPaths` of the workspace ``root`` under the given options and config."""
    return DaemonPaths(_cache_dir(root, args, config))


def _load_config_or_none(root: Path) -> Any:
    from fxscope.project.config import ConfigError, load_config

    try:
        return load_config(root)
    except ConfigError:
        return None


def _secure_directory(directory: Path) -> None:
    """Create ``directory`` (0700) or make sure it is ours and not group/world-writable."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(directory)
    except OSError as exc:
        raise DaemonError(f"cannot create the daemon directory {directory}: {exc.strerror or exc}") from None
    if st.st_uid != os.getuid():
        raise DaemonError(f"daemon directory {directory} is owned by another user")
    if st.st_mode & 0o022:
        try:
            os.chmod(directory, stat.S_IMODE(st.st_mode) & ~0o022)
        except OSError as exc:
            raise DaemonError(f"daemon directory {directory} is writable by others and cannot be "
                              f"restricted: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _sockaddr(path: Path) -> Iterator[str]:
    """An address for ``path`` that fits ``sockaddr_un``: the path itself when short enough,
    else (Linux) the same file reached through ``/proc/self/fd`` of its open directory."""
    text = str(path)
    if len(os.fsencode(text)) < _SUN_PATH_MAX or not os.path.isdir("/proc/self/fd"):
        yield text
        return
    fd = os.open(path.parent, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_PATH", 0))
    try:
        yield f"/proc/self/fd/{fd}/{path.name}"
    finally:
        os.close(fd)


# ---------------------------------------------------------------------------------------------
# client side


def _connect(path: Path, timeout: float | None) -> socket.socket:
    """A connected socket; :class:`_NotRunning` when there is no socket or no listener."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise _NotRunning() from None
    except OSError as exc:
        raise DaemonError(f"cannot reach the daemon at {path}: {exc.strerror or exc}") from None
    if not stat.S_ISSOCK(st.st_mode):
        raise DaemonError(f"{path} exists and is not a socket")
    if st.st_uid != os.getuid():
        raise DaemonError(f"{path} belongs to another user; refusing to use it")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        with _sockaddr(path) as addr:
            sock.connect(addr)
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        raise _NotRunning() from None
    except OSError as exc:
        sock.close()
        raise DaemonError(f"cannot connect to the daemon at {path}: {exc.strerror or exc}") from None
    return sock


def _exchange(sock: socket.socket, message: dict[str, Any]) -> dict[str, Any]:
    sock.sendall(json.dumps(message).encode("utf-8") + b"\n")
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

    Raises :class:`_NotRunning` when nothing listens there and :class:`DaemonError` on failures.
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


def _remove_stale(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        st = os.lstat(path)
        if stat.S_ISSOCK(st.st_mode) and st.st_uid == os.getuid():
            os.unlink(path)


def _status(paths: DaemonPaths) -> dict[str, Any] | None:
    """The running daemon's status reply, or None when none answers (a stale socket is removed)."""
    try:
        reply = request(paths.socket, {"op": "status"}, timeout=PING_TIMEOUT)
    except _NotRunning:
        _remove_stale(paths.socket)
        return None
    return reply if reply.get("ok") else None


@contextlib.contextmanager
def _start_lock(paths: DaemonPaths) -> Iterator[None]:
    """Serialise concurrent starters (two ``check --daemon`` at once start one daemon)."""
    import fcntl

    fd = os.open(paths.start_lock, os.O_RDWR | os.O_CREAT, 0o600)
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


def _spawn(root: Path, args: argparse.Namespace, paths: DaemonPaths) -> subprocess.Popen[bytes]:
    """Start ``python -m fxscope daemon run`` detached, its output appended to the log."""
    command = [sys.executable, "-m", "fxscope", "daemon", "run", "--root", str(root)]
    if getattr(args, "cache_dir", None) is not None:
        command += ["--cache-dir", str(paths.directory)]
    if getattr(args, "workers", None):
        command += ["--workers", str(args.workers)]
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


def _ensure_running(root: Path, args: argparse.Namespace, paths: DaemonPaths, *,
                    wait_worker: bool) -> tuple[dict[str, Any], bool]:
    """The status of the running daemon, starting one first if needed; ``(status, started)``."""
    _secure_directory(paths.directory)
    with _start_lock(paths):
        status = _status(paths)
        if status is not None:
            return status, False
        proc = _spawn(root, args, paths)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if proc.poll() is not None:
                tail = _log_tail(paths.log)
                raise DaemonError(f"the daemon exited at start-up (code {proc.returncode})"
                                  + (f": {tail}" if tail else f"; see {paths.log}"))
            try:
                status = request(paths.socket, {"op": "status"}, timeout=PING_TIMEOUT)
            except _NotRunning:
                status = None
            if status is not None and (not wait_worker or status.get("worker") != "starting"):
                return status, True
            if time.monotonic() > deadline:
                raise DaemonError(f"the daemon did not answer within {START_TIMEOUT:g} s; see {paths.log}")
            time.sleep(_POLL)


def _describe(status: dict[str, Any], paths: DaemonPaths) -> str:
    uptime = float(status.get("uptime", 0))
    up = f"{uptime:.0f}s" if uptime < 120 else f"{uptime / 60:.0f}m" if uptime < 7200 else f"{uptime / 3600:.1f}h"
    checks = int(status.get("checks", 0))
    return (f"fxscope daemon running (pid {status.get('pid')}, root {status.get('root')}, up {up}, "
            f"torch {status.get('torch')}, worker {status.get('worker')}, "
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


def _stop(paths: DaemonPaths) -> int:
    try:
        reply = request(paths.socket, {"op": "stop"}, timeout=PING_TIMEOUT)
    except _NotRunning:
        _remove_stale(paths.socket)
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


def command(action: str, root: Path, args: argparse.Namespace) -> int:
    """Run ``fxscope daemon ACTION``; returns the exit status (``status``: 0 running, 1 not)."""
    config = _load_config_or_none(root)  # the caller has reported a broken config where it matters
    paths = daemon_paths(root, args, config)
    if action == "run":
        return _Server(root, args, paths).serve()
    if action == "start":
        status, started = _ensure_running(root, args, paths, wait_worker=True)
        if started:
            sys.stdout.write(f"fxscope daemon started (pid {status.get('pid')}, socket {paths.socket})\n")
        else:
            sys.stdout.write(f"fxscope daemon already running (pid {status.get('pid')})\n")
        if str(status.get("worker", "")).startswith("failed"):
            sys.stderr.write(f"fxscope: warning: the daemon's worker did not start: {status['worker']}\n")
        return 0
    if action == "stop":
        return _stop(paths)
    if action == "status":
        status = _status(paths) if paths.socket.exists() else None
        if status is None:
            sys.stdout.write("fxscope daemon is not running\n")
            return 1
        sys.stdout.write(_describe(status, paths) + "\n")
        return 0
    raise UsageError(f"unknown daemon action {action!r}")


def check_via_daemon(root: Path, args: argparse.Namespace, paths: list[Path] | None) -> dict[str, Any]:
    """Run ``fxscope check`` in the workspace's daemon (started first if it is not running) and
    return the report dict. The daemon's warnings are written to stderr; nothing to stdout."""
    where = daemon_paths(root, args, _load_config_or_none(root))
    message = {
        "op": "check",
        "root": str(root),
        "paths": [str(p) for p in paths] if paths else None,
        "graphs": bool(getattr(args, "graphs", False)),
        "shard": list(args.shard) if getattr(args, "shard", None) else None,
        "no_cache": bool(getattr(args, "no_cache", False)),
        "retry_faults": bool(getattr(args, "retry_faults", False)),
        "client": {"version": __version__, "python": sys.executable},
    }
    for attempt in range(3):
        if not where.socket.exists() or attempt:
            _ensure_running(root, args, where, wait_worker=False)
        try:
            reply = request(where.socket, message)
        except _NotRunning:
            _remove_stale(where.socket)
            continue
        if reply.get("stale") and attempt < 2:  # a daemon of another fxscope or interpreter
            with contextlib.suppress(_NotRunning, DaemonError):
                _stop_quietly(where)
            continue
        if not reply.get("ok"):
            raise DaemonError(str(reply.get("error") or "the daemon could not check"))
        for warning in reply.get("warnings") or []:
            sys.stderr.write(f"fxscope: warning: {warning}\n")
        report = reply.get("report")
        if not isinstance(report, dict):
            raise DaemonError("the daemon sent a reply without a report")
        return report
    raise DaemonError(f"could not reach the daemon at {where.socket}; see {where.log}")


def _stop_quietly(paths: DaemonPaths) -> None:
    reply = request(paths.socket, {"op": "stop"}, timeout=PING_TIMEOUT)
    pid = reply.get("pid")
    _wait_gone(paths, pid if isinstance(pid, int) else None)


# ---------------------------------------------------------------------------------------------
# server side


def _pyproject_signature(root: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(root / "pyproject.toml")
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class _Server:
    """The daemon process: one engine, a listening socket, a thread per client."""

    def __init__(self, root: Path, args: argparse.Namespace, paths: DaemonPaths) -> None:
        self.root = root
        self.args = args
        self.paths = paths
        self.pinned_cache_dir = getattr(args, "cache_dir", None) is not None
        self.started = time.time()
        self.checks = 0
        self.stopping = threading.Event()
        self.engine_lock = threading.Lock()
        self.engine: Any = None
        self.config: Any = None
        self.config_sig: tuple[int, int, int] | None = None
        self.worker_state = "starting"
        self.worker_info: dict[str, Any] = {}
        self.listener: socket.socket | None = None
        self.socket_ino: int | None = None
        self.pid_fd: int | None = None
        self._warnings: list[str] | None = None
        self._moved_checked: tuple[int, int, int] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def serve(self) -> int:
        logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                            format="%(asctime)s fxscope-daemon[%(process)d] %(levelname)s %(message)s")
        from fxscope.project.config import ConfigError, load_config

        _secure_directory(self.paths.directory)
        self.config_sig = _pyproject_signature(self.root)
        try:
            self.config = load_config(self.root)
        except ConfigError as exc:
            raise UsageError(str(exc)) from None
        if not self._take_pid_file():
            return 1
        try:
            self.engine = self._new_engine(self.config)
            self._listen()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, self._on_signal)
            log.info("serving %s on %s (fxscope %s, python %s)", self.root, self.paths.socket,
                     __version__, sys.executable)
            threading.Thread(target=self._warm, name="fxscope-daemon-warm", daemon=True).start()
            self._accept_loop()
        finally:
            self._shutdown()
        log.info("stopped")
        return 0

    def _take_pid_file(self) -> bool:
        """Hold an exclusive lock on the pid file for the daemon's life: one daemon per directory."""
        import fcntl

        fd = os.open(self.paths.pid, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EAGAIN, errno.EACCES):
                try:
                    other = self.paths.pid.read_text().strip()
                except OSError:
                    other = "?"
                log.error("another daemon (pid %s) already serves %s", other, self.paths.directory)
                return False
            raise
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.pid_fd = fd
        return True

    def _new_engine(self, config: Any, old: Any = None) -> Any:
        from fxscope.engine import Engine

        engine = Engine(self.root, config, cache_dir=self.paths.directory if self.pinned_cache_dir else None,
                        workers=getattr(self.args, "workers", None), on_warning=self._warn)
        if old is not None and not engine.adopt_workers(old):
            same_pool = old.config.preload == config.preload and old.workers == engine.workers
            if not same_pool:
                self.worker_state = "starting"
                threading.Thread(target=self._warm, name="fxscope-daemon-warm", daemon=True).start()
        return engine

    def _listen(self) -> None:
        _remove_stale(self.paths.socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            with _sockaddr(self.paths.socket) as addr:
                sock.bind(addr)
        except BaseException:
            sock.close()
            raise
        finally:
            os.umask(old_mask)
        os.chmod(self.paths.socket, 0o600)
        self.socket_ino = os.lstat(self.paths.socket).st_ino
        sock.listen(16)
        sock.settimeout(0.5)
        self.listener = sock

    def _warm(self) -> None:
        """Start the worker zygote now, so that the first check does not wait for torch."""
        try:
            with self.engine_lock:
                pool = self.engine.pool
            info = pool.ensure_started(timeout=START_TIMEOUT)
        except Exception as exc:  # noqa: BLE001 - reported by status, retried by the next check
            self.worker_state = f"failed: {exc}"
            log.error("worker did not start: %s", exc)
            return
        self.worker_info = dict(info or {})
        self.worker_state = "ready"
        log.info("worker ready (pid %s, torch %s)", self.worker_info.get("pid"),
                 self.worker_info.get("torch_version"))

    def _on_signal(self, signum: int, frame: Any) -> None:
        log.info("signal %d: stopping", signum)
        self.stopping.set()

    def _socket_is_ours(self) -> bool:
        try:
            return os.lstat(self.paths.socket).st_ino == self.socket_ino
        except OSError:
            return False

    def _accept_loop(self) -> None:
        assert self.listener is not None
        last_check = time.monotonic()
        while not self.stopping.is_set():
            try:
                conn, _ = self.listener.accept()
            except socket.timeout:
                now = time.monotonic()
                if now - last_check > 2.0:
                    last_check = now
                    if not self._socket_is_ours() or not self.root.is_dir():
                        log.info("socket or workspace removed: stopping")
                        break
                    if self._cache_dir_moved():
                        log.info("pyproject.toml moved the cache directory: stopping")
                        break
                continue
            except OSError as exc:
                if self.stopping.is_set():
                    break
                log.error("accept failed: %s", exc)
                time.sleep(0.1)
                continue
            conn.settimeout(None)
            threading.Thread(target=self._client, args=(conn,), name="fxscope-daemon-client",
                             daemon=True).start()

    def _cache_dir_moved(self) -> bool:
        """Whether pyproject.toml now puts the cache (and so the socket clients look for)
        elsewhere; clients would start a second daemon there, so this one must go."""
        if self.pinned_cache_dir:
            return False
        sig = _pyproject_signature(self.root)
        if sig == self.config_sig or sig == self._moved_checked:
            return False
        self._moved_checked = sig
        config = _load_config_or_none(self.root)
        return config is not None and _cache_dir(self.root, self.args, config) != self.paths.directory

    def _shutdown(self) -> None:
        self.stopping.set()
        if self.listener is not None:
            self.listener.close()
            if self._socket_is_ours():
                with contextlib.suppress(OSError):
                    os.unlink(self.paths.socket)
        if self.engine is not None:
            # A running check ends when its jobs are cancelled by closing the pool.
            acquired = self.engine_lock.acquire(timeout=1.0)
            if not acquired:
                log.info("a check is still running; cancelling it")
            try:
                self.engine.close()
            finally:
                if acquired:
                    self.engine_lock.release()
        if self.pid_fd is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.paths.pid)
            os.close(self.pid_fd)
            self.pid_fd = None

    # -- requests --------------------------------------------------------------------------------
    def _client(self, conn: socket.socket) -> None:
        try:
            with conn, conn.makefile("rb") as reader:
                for line in reader:
                    if not line.strip():
                        continue
                    reply = self._handle_line(line)
                    try:
                        conn.sendall(json.dumps(reply).encode("utf-8") + b"\n")
                    except OSError:
                        return
                    if self.stopping.is_set():
                        return
        except OSError as exc:
            log.info("client connection failed: %s", exc)

    def _handle_line(self, line: bytes) -> dict[str, Any]:
        try:
            message = json.loads(line)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            return {"ok": False, "error": f"malformed request: {exc}"}
        if not isinstance(message, dict):
            return {"ok": False, "error": "malformed request: expected a JSON object"}
        op = message.get("op")
        try:
            if op == "status":
                return self._op_status()
            if op == "stop":
                self.stopping.set()
                return {"ok": True, "pid": os.getpid()}
            if op == "check":
                return self._op_check(message)
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the daemon
            log.exception("request %r failed", op)
            return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}
        return {"ok": False, "error": f"unknown op {op!r} (expected check, status or stop)"}

    def _op_status(self) -> dict[str, Any]:
        engine = self.engine
        torch = self.worker_info.get("torch_version") or (engine.torch_version if engine else "unknown")
        return {
            "ok": True,
            "pid": os.getpid(),
            "root": str(self.root),
            "uptime": round(time.time() - self.started, 3),
            "torch": torch,
            "checks": self.checks,
            "worker": self.worker_state,
            "version": __version__,
            "python": sys.executable,
            "socket": str(self.paths.socket),
        }

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        if self._warnings is not None:
            self._warnings.append(message)

    def _reload_config(self) -> str | None:
        """Re-read pyproject.toml if it changed; an error message when it is now invalid."""
        from fxscope.project.config import ConfigError, load_config

        sig = _pyproject_signature(self.root)
        if sig == self.config_sig:
            return None
        try:
            config = load_config(self.root)
        except ConfigError as exc:
            return str(exc)
        self.config_sig = sig
        if config == self.config:
            return None
        log.info("pyproject.toml changed: reloading the configuration")
        old = self.engine
        self.engine = self._new_engine(config, old)
        self.config = config
        old.close()
        if not self.pinned_cache_dir and self.engine.cache_directory != self.paths.directory:
            log.info("the cache directory moved to %s: stopping after this check", self.engine.cache_directory)
            self.stopping.set()
        return None

    def _op_check(self, message: dict[str, Any]) -> dict[str, Any]:
        root = message.get("root")
        if root is not None and Path(root).resolve() != self.root:
            return {"ok": False, "error": f"this daemon serves {self.root}, not {root}"}
        client = message.get("client") or {}
        if client and (client.get("version") != __version__ or client.get("python") != sys.executable):
            return {"ok": False, "stale": True,
                    "error": f"the daemon runs fxscope {__version__} on {sys.executable}; restart it"}
        paths = message.get("paths")
        if paths is not None and (not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)):
            return {"ok": False, "error": "'paths' must be a list of strings or null"}
        shard = message.get("shard")
        if shard is not None:
            if (not isinstance(shard, list) or len(shard) != 2 or not all(isinstance(x, int) for x in shard)
                    or not (shard[1] >= 1 and 1 <= shard[0] <= shard[1])):
                return {"ok": False, "error": "'shard' must be [i, n] with 1 <= i <= n, or null"}
            shard = (shard[0], shard[1])
        with self.engine_lock:
            if self.stopping.is_set():
                return {"ok": False, "error": "the daemon is stopping"}
            error = self._reload_config()
            if error is not None:
                return {"ok": False, "error": error}
            self._warnings = []
            try:
                report = self.engine.check([Path(p) for p in paths] if paths else None,
                                           graphs=bool(message.get("graphs")), shard=shard,
                                           use_cache=not message.get("no_cache"),
                                           retry_faults=bool(message.get("retry_faults")))
            finally:
                warnings, self._warnings = self._warnings, None
            self.checks += 1
        return {"ok": True, "report": report, "warnings": warnings}
