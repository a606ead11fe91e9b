"""The daemon process: a listening Unix socket in front of one :class:`Workspace`.

Like ``dmypy``, the daemon keeps the session (its worker zygote, which has imported torch, and its
result cache) alive between checks, so a check skips the interpreter and torch start-up. It is a
thin transport: every request is answered by the Workspace (``check`` re-reads ``pyproject.toml``,
keeping the warm pool when only unrelated keys changed). One thread per client; checks are
serialised. See :mod:`fxscope.server.protocol` for the requests.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import signal
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any

from fxscope import __version__
from fxscope.session import SessionSettings, Workspace
from fxscope.errors import CheckError
from fxscope.project.config import ConfigError
from fxscope.server.client import remove_stale
from fxscope.server.paths import (
    DaemonPaths,
    cache_dir,
    load_config_or_none,
    pyproject_signature,
    secure_directory,
    sockaddr,
)
from fxscope.server.protocol import ProtocolError, decode, encode, parse_check

__all__ = ["DaemonServer"]

log = logging.getLogger("fxscope.daemon")


class DaemonServer:
    """Serve ``root`` on ``paths.socket`` until stopped (``stop`` request, SIGTERM/SIGINT/SIGHUP,
    the socket or workspace removed, or the configuration moving the cache directory).

    ``pinned``: the ``--cache-dir`` the daemon was started with (None: the config decides);
    ``sandbox`` False: ``--no-sandbox`` (None: the config's ``sandbox``).
    Raises ConfigError from :meth:`serve` when ``pyproject.toml`` is invalid at start."""

    def __init__(self, root: Path, paths: DaemonPaths, *, pinned: Path | None = None,
                 workers: int | None = None, sandbox: bool | None = None) -> None:
        self.root = root
        self.paths = paths
        self.pinned = pinned
        self.workers = workers
        self.sandbox = sandbox
        self.started = time.time()
        self.checks = 0
        self.stopping = threading.Event()
        self.check_lock = threading.Lock()
        self.workspace: Workspace | None = None
        self.listener: socket.socket | None = None
        self.socket_ino: int | None = None
        self.pid_fd: int | None = None
        self._warnings: list[str] | None = None
        self._config_sig: tuple[int, int, int] | None = None
        self._moved_checked: tuple[int, int, int] | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def serve(self) -> int:
        """Run until stopped; the exit status (1 when another daemon already serves here)."""
        logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                            format="%(asctime)s fxscope-daemon[%(process)d] %(levelname)s %(message)s")
        secure_directory(self.paths.directory)
        self._config_sig = pyproject_signature(self.root)
        settings = SessionSettings(workers=self.workers, cache_dir=self.paths.directory if self.pinned else None,
                                   sandbox=self.sandbox)
        workspace = Workspace(self.root, settings=settings, on_warning=self._warn)  # ConfigError: the caller's
        if not self._take_pid_file():
            workspace.close()
            return 1
        self.workspace = workspace
        try:
            self._listen()
            for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
                signal.signal(sig, self._on_signal)
            log.info("serving %s on %s (fxscope %s, python %s)", self.root, self.paths.socket,
                     __version__, sys.executable)
            workspace.warm()
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

    def _listen(self) -> None:
        remove_stale(self.paths.socket)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_mask = os.umask(0o177)
        try:
            with sockaddr(self.paths.socket) as addr:
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
        if self.pinned is not None:
            return False
        sig = pyproject_signature(self.root)
        if sig == self._config_sig or sig == self._moved_checked:
            return False
        self._moved_checked = sig
        config = load_config_or_none(self.root)
        return config is not None and cache_dir(self.root, None, config) != self.paths.directory

    def _shutdown(self) -> None:
        self.stopping.set()
        if self.listener is not None:
            self.listener.close()
            if self._socket_is_ours():
                with contextlib.suppress(OSError):
                    os.unlink(self.paths.socket)
        if self.workspace is not None:
            self.workspace.close()  # kills running children; a running check ends interrupted
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
                    reply = self.handle(line, conn)
                    try:
                        conn.sendall(encode(reply))
                    except OSError:
                        return
                    if self.stopping.is_set():
                        return
        except OSError as exc:
            log.info("client connection failed: %s", exc)

    def handle(self, line: bytes, conn: socket.socket | None = None) -> dict[str, Any]:
        """The reply to one request line (``conn``: the client, whose going away cancels its check)."""
        try:
            message = decode(line)
        except ProtocolError as exc:
            return {"ok": False, "error": str(exc)}
        op = message.get("op")
        try:
            if op == "status":
                return self._op_status()
            if op == "stop":
                self.stopping.set()
                return {"ok": True, "pid": os.getpid()}
            if op == "check":
                return self._op_check(message, conn)
        except Exception as exc:  # noqa: BLE001 - one bad request must not kill the daemon
            log.exception("request %r failed", op)
            return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}"}
        return {"ok": False, "error": f"unknown op {op!r} (expected check, status or stop)"}

    def _op_status(self) -> dict[str, Any]:
        assert self.workspace is not None
        status = self.workspace.status()
        return {
            "ok": True,
            "pid": os.getpid(),
            "root": str(self.root),
            "uptime": round(time.time() - self.started, 3),
            "torch": status.torch,
            "checks": self.checks,
            "worker": status.worker,
            "targets": status.total,
            "version": __version__,
            "python": sys.executable,
            "socket": str(self.paths.socket),
            "sandbox": status.sandbox.on if status.sandbox is not None else None,
        }

    def _warn(self, message: str) -> None:
        log.warning("%s", message)
        if self._warnings is not None:
            self._warnings.append(message)

    def _watch_client(self, conn: socket.socket, done: threading.Event) -> None:
        """Cancel the running check when its client goes away (Ctrl-C on ``check --daemon``)."""
        while not done.wait(0.2):
            try:
                readable, _, _ = select.select([conn], [], [], 0)
                gone = bool(readable) and conn.recv(1, socket.MSG_PEEK) == b""
            except OSError:
                gone = True
            if gone and not done.is_set() and self.workspace is not None:
                log.info("the client went away: cancelling its check")
                self.workspace.cancel()
                return

    def _op_check(self, message: dict[str, Any], conn: socket.socket | None = None) -> dict[str, Any]:
        assert self.workspace is not None
        try:
            req = parse_check(message)
        except ProtocolError as exc:
            return {"ok": False, "error": str(exc)}
        if req.root is not None and Path(req.root).resolve() != self.root:
            return {"ok": False, "error": f"this daemon serves {self.root}, not {req.root}"}
        if req.client and (req.client.get("version") != __version__ or req.client.get("python") != sys.executable):
            return {"ok": False, "stale": True,
                    "error": f"the daemon runs fxscope {__version__} on {sys.executable}; restart it"}
        with self.check_lock:
            if self.stopping.is_set():
                return {"ok": False, "error": "the daemon is stopping"}
            self._warnings = []
            done = threading.Event()
            if conn is not None:
                threading.Thread(target=self._watch_client, args=(conn, done), name="fxscope-daemon-watch",
                                 daemon=True).start()
            try:
                report = self.workspace.check([Path(p) for p in req.paths] if req.paths else None,
                                              graphs=req.graphs, shard=req.shard, use_cache=not req.no_cache,
                                              retry_faults=req.retry_faults)
            except (ConfigError, CheckError) as exc:
                return {"ok": False, "error": str(exc)}
            finally:
                done.set()
                warnings, self._warnings = self._warnings, None
            self._config_sig = pyproject_signature(self.root)
            self.checks += 1
            if self.pinned is None and self.workspace.engine.cache_directory != self.paths.directory:
                log.info("the cache directory moved to %s: stopping after this check",
                         self.workspace.engine.cache_directory)
                self.stopping.set()
        return {"ok": True, "report": report.to_json(), "warnings": warnings}
