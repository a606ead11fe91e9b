"""Where one workspace's daemon keeps its socket, pid file, log and start lock (the cache
directory, mode 0700), and how a long socket path still fits ``sockaddr_un``."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fxscope.server.protocol import DaemonError

__all__ = ["DaemonPaths", "cache_dir", "daemon_paths", "load_config_or_none", "pyproject_signature",
           "secure_directory", "sockaddr"]

SOCKET_NAME = "daemon.sock"
PID_NAME = "daemon.pid"
LOG_NAME = "daemon.log"
START_LOCK_NAME = "daemon.start.lock"
_SUN_PATH_MAX = 100  # a little under the kernel's 108 bytes of sockaddr_un.sun_path


class DaemonPaths:
    """Where one workspace's daemon keeps its socket, pid file, log and start lock."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.socket = directory / SOCKET_NAME
        self.pid = directory / PID_NAME
        self.log = directory / LOG_NAME
        self.start_lock = directory / START_LOCK_NAME


def cache_dir(root: Path, pinned: Path | None, config: Any) -> Path:
    """The cache directory the engine uses (``--cache-dir``, config ``cache-dir``, default), as
    the engine claims it: a directory fxscope did not create gets an ``fxscope/`` sub-directory."""
    from fxscope.cache import claim_directory

    if pinned is not None:
        return claim_directory(Path(pinned).resolve())
    if config is not None and config.cache_dir is not None:
        return claim_directory(Path(config.cache_dir))
    return claim_directory(root / ".fxscope_cache")


def daemon_paths(root: Path, pinned: Path | None, config: Any = None) -> DaemonPaths:
    """The :class:`DaemonPaths` of the workspace ``root`` (``pinned``: ``--cache-dir``)."""
    return DaemonPaths(cache_dir(root, pinned, config))


def load_config_or_none(root: Path) -> Any:
    """The workspace's config, or None when ``pyproject.toml`` is invalid."""
    from fxscope.project.config import ConfigError, load_config

    try:
        return load_config(root)
    except ConfigError:
        return None


def pyproject_signature(root: Path) -> tuple[int, int, int] | None:
    """(mtime, size, inode) of ``root/pyproject.toml``, None when absent."""
    try:
        st = os.stat(root / "pyproject.toml")
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def secure_directory(directory: Path) -> None:
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
def sockaddr(path: Path) -> Iterator[str]:
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
