"""Files changed outside the editor (``git checkout``, generators): watchdog on each folder, and
``workspace/didChangeWatchedFiles`` when the client offers it. Both end in
``Workspace.files_changed``, batched over a short quiet period."""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:
    from watchdog.events import FileSystemEvent
    from watchdog.observers.api import BaseObserver

__all__ = ["FolderWatcher", "WATCH_GLOBS", "is_relevant"]

log = logging.getLogger("fxscope.lsp")

#: What the client is asked to watch (``workspace/didChangeWatchedFiles`` registration).
WATCH_GLOBS = ("**/*.py", "**/*.ipynb", "**/pyproject.toml")
_IGNORED_DIRS = {".git", ".hg", ".svn", "__pycache__", ".fxscope_cache", ".venv", "venv", ".tox", ".nox",
                 "node_modules", "build", "dist", ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages",
                 ".ipynb_checkpoints"}
#: Quiet time before a batch of disk changes is handed to the Workspace.
BATCH_S = 0.15


def is_relevant(path: Path, root: Path) -> bool:
    """A Python file, a notebook or pyproject.toml under ``root``, outside caches, VCS and virtual
    envs.

    >>> is_relevant(Path("/r/pkg/m.py"), Path("/r")), is_relevant(Path("/r/.venv/x.py"), Path("/r"))
    (True, False)
    """
    if path.suffix not in (".py", ".ipynb") and path.name != "pyproject.toml":
        return False
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False
    return not any(part in _IGNORED_DIRS or part.endswith(".egg-info") for part in rel.parts[:-1])


class FolderWatcher:
    """A watchdog observer on ``root`` that calls ``on_change(paths)`` with batches of changed
    files (from its own thread)."""

    def __init__(self, root: Path, on_change: Callable[[list[Path]], None]) -> None:
        self.root = root
        self._on_change = on_change
        self._pending: set[Path] = set()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._observer: BaseObserver | None = None

    def start(self) -> bool:
        """Start watching; False when watchdog cannot watch this folder (then only the client's
        notifications count)."""
        try:
            from watchdog.events import FileSystemEventHandler
            from watchdog.observers import Observer
        except ImportError:  # pragma: no cover - a dependency
            return False
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                if event.event_type in ("opened", "closed_no_write"):
                    return
                paths = [getattr(event, "src_path", None), getattr(event, "dest_path", None)]
                watcher.add(Path(p.decode() if isinstance(p, bytes) else p) for p in paths if p)

        try:
            observer = Observer()
            observer.daemon = True
            observer.schedule(Handler(), str(self.root), recursive=True)
            observer.start()
        except Exception as e:  # noqa: BLE001 - inotify limits, a vanished folder
            log.warning("cannot watch %s for changes: %s", self.root, e)
            return False
        self._observer = observer
        return True

    def add(self, paths: Iterable[Path]) -> None:
        relevant = [p for p in paths if is_relevant(p, self.root)]
        if not relevant:
            return
        with self._lock:
            self._pending.update(relevant)
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(BATCH_S, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = sorted(self._pending), set()
            self._timer = None
        if batch:
            try:
                self._on_change(batch)
            except Exception:
                log.exception("handling changed files failed")

    def stop(self) -> None:
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        if self._observer is not None:
            try:
                self._observer.stop()
                self._observer.join(timeout=2)
            except Exception:  # noqa: BLE001 - stopping the watcher never fails the shutdown
                pass
            self._observer = None
