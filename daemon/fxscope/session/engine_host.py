"""The configuration and engine of one workspace root: loaded at start, reloaded when
``pyproject.toml`` changes, rebuilt when the front end's settings change (handing the warm worker
pool over when it fits), warmed up, closed. Part of the :class:`~fxscope.session.Workspace`.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable
from pathlib import Path

from fxscope.engine.engine import Engine
from fxscope.errors import CheckError, WorkerStartError
from fxscope.project.config import Config, ConfigError, load_config
from fxscope.project.files import relpath
from fxscope.model.sandbox import SandboxStatus
from fxscope.session.data import ResultsEvent, SessionSettings

__all__ = ["EngineHost", "Events"]


class Events:
    """The workspace's callbacks: ``results`` (None: nobody listens, so no event is built),
    ``warning`` (one-line warnings) and ``error`` (a round or the worker's start-up ended with a
    :class:`~fxscope.errors.CheckError`; without a listener it becomes a warning)."""

    def __init__(self, on_results: Callable[[ResultsEvent], None] | None,
                 on_warning: Callable[[str], None] | None,
                 on_error: Callable[[CheckError], None] | None = None) -> None:
        self.results = on_results
        self.warning: Callable[[str], None] = on_warning or (lambda message: None)
        self._error = on_error

    def error(self, exc: CheckError) -> None:
        """Report ``exc`` to the error listener, else as a warning."""
        if self._error is not None:
            self._error(exc)
        else:
            self.warning(str(exc))


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class EngineHost:
    """Owns the settings, the configuration and the engine of one root (thread-safe).

    Raises :class:`~fxscope.project.config.ConfigError` when ``pyproject.toml`` is invalid at
    start."""

    def __init__(self, root: Path, settings: SessionSettings, events: Events) -> None:
        self.root = root
        self.settings = settings
        self._events = events
        self._lock = threading.RLock()
        self._signature = _signature(root / "pyproject.toml")
        self._base = load_config(root)
        self.config_error: str | None = None
        self._worker = "idle"
        self._failed_info: object = None  # the pool's info when the worker last failed to start
        self._closed = False
        self.engine = self._new_engine(self._base)

    def _new_engine(self, config: Config, old: Engine | None = None) -> Engine:
        s = self.settings
        if s.timeout is not None and s.timeout != config.timeout:
            config = dataclasses.replace(config, timeout=float(s.timeout))
        if s.sandbox is not None and s.sandbox != config.sandbox:
            config = dataclasses.replace(config, sandbox=s.sandbox)
        engine = Engine(self.root, config, cache_dir=s.cache_dir, workers=s.workers, on_warning=self._events.warning)
        if old is not None:
            if not engine.adopt_workers(old):
                self._worker = "idle"
            old.close()
        return engine

    def rel(self, path: Path | str) -> str:
        """``path`` relative to the root (posix), or absolute when outside it."""
        return relpath(self.engine.config, Path(path))

    def check_open(self) -> None:
        """Raise RuntimeError once the workspace is closed."""
        if self._closed:
            raise RuntimeError("the workspace is closed")

    def close(self) -> bool:
        """Mark closed; True the first time."""
        with self._lock:
            first, self._closed = not self._closed, True
        return first

    def update_settings(self, settings: SessionSettings) -> bool:
        """Apply new settings; True when every target must be checked again."""
        with self._lock:
            old, self.settings = self.settings, settings
            rebuild = (old.workers, old.timeout, old.cache_dir, old.sandbox) != (
                settings.workers, settings.timeout, settings.cache_dir, settings.sandbox)
            if rebuild:
                self.engine = self._new_engine(self._base, self.engine)
            return rebuild or (settings.enabled and not old.enabled) or settings.use_cache != old.use_cache

    def reload_config(self) -> tuple[str | None, bool]:
        """Re-read ``pyproject.toml`` when it changed: (the error when it is now invalid, whether
        the configuration changed). An invalid file keeps the previous configuration."""
        with self._lock:
            sig = _signature(self.root / "pyproject.toml")
            if sig == self._signature:
                return self.config_error, False
            try:
                config = load_config(self.root)
            except ConfigError as exc:
                self.config_error = str(exc)
                self._events.warning(self.config_error)
                return self.config_error, False
            self._signature, self.config_error = sig, None
            if config == self._base:
                return None, False
            self._base = config
            self.engine = self._new_engine(config, self.engine)
            return None, True

    def starting(self) -> None:
        """The worker is being started."""
        self._worker = "starting"

    def warm(self) -> None:
        """Start the worker zygote and wait until it is ready (a failure is reported, and the
        next job retries)."""
        engine = self.engine
        try:
            engine.pool.ensure_started(timeout=120)
        except WorkerStartError as exc:  # reported by status() and the error event; the next job retries
            self.worker_failed(exc)
            return
        except Exception as exc:  # noqa: BLE001 - reported by status(); the next job retries
            self._worker = f"failed: {exc}"
            self._events.warning(f"the worker did not start: {exc}")
            return
        if engine is self.engine:
            self._worker = "ready"

    def worker_failed(self, exc: WorkerStartError) -> None:
        """The worker could not start (a missing torch, a preload that hangs): ``status().worker``
        says so until a worker starts, and the error is reported once per occurrence."""
        self._worker = f"failed: {exc}"
        self._failed_info = self.engine.worker_info()
        self._events.error(exc)

    def sandbox(self) -> SandboxStatus:
        """Whether the workspace's code runs in the OS sandbox (the started worker's, else the one
        it would get)."""
        return self.engine.sandbox_status()

    def worker(self) -> tuple[str, str]:
        """The worker state (idle, starting, ready, ``failed: ...``) and the torch version."""
        engine = self.engine
        info = engine.worker_info()
        worker = self._worker
        if info is not None and (worker in ("idle", "starting")
                                 or (worker.startswith("failed") and info is not self._failed_info)):
            worker = "ready"  # a worker started since
        torch = info.get("torch_version") if info is not None else None
        return worker, str(torch or engine.torch_version)
