"""``fxscope watch [PATHS]``: re-check on every file change and print what changed.

The first front end on the :class:`~fxscope.session.Workspace`: watchdog reports file
changes, the session's scheduler debounces them and re-traces only the affected targets, and each
time it goes idle the text report of the files whose findings changed is printed::

    $ fxscope watch models/
    fxscope: watching /ws (3 targets); Ctrl-C to stop
    All checks passed: 3 targets traced (3 cached) in 0.05s
    --- 12:04:31 models/gpt.py changed
    models/gpt.py:42:12: FXS101 ...
    Found 1 error in 1 of 3 targets (...)
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from fxscope.session import ResultsEvent, SessionSettings, Workspace

__all__ = ["watch"]


class _Changes:
    """Files whose findings changed since the last print (filled from worker threads)."""

    def __init__(self) -> None:
        self.files: set[Path] = set()
        self.lock = threading.Lock()
        self.event = threading.Event()

    def add(self, ev: ResultsEvent) -> None:
        with self.lock:
            self.files.update(ev.files)
        self.event.set()

    def take(self) -> set[Path]:
        with self.lock:
            out, self.files = self.files, set()
            self.event.clear()
            return out


def _observer(root: Path, ws: Workspace, on_disk_change: threading.Event) -> Any:
    from watchdog.events import FileSystemEvent, FileSystemEventHandler
    from watchdog.observers import Observer

    cache = str(ws.engine.cache_directory)

    class Handler(FileSystemEventHandler):
        def on_any_event(self, event: FileSystemEvent) -> None:
            if event.is_directory or event.event_type in ("opened", "closed_no_write"):
                return
            paths = [Path(str(p)) for p in (event.src_path, getattr(event, "dest_path", "")) if p]
            paths = [p for p in paths if (p.suffix in (".py", ".ipynb") or p.name == "pyproject.toml")
                     and not str(p).startswith(cache)]
            if paths:
                ws.files_changed(paths)
                on_disk_change.set()

    observer = Observer()
    observer.schedule(Handler(), str(root), recursive=True)
    observer.daemon = True
    observer.start()
    return observer


def _print_report(ws: Workspace, root: Path, paths: list[Path] | None, files: set[Path] | None,
                  out: TextIO, color: bool) -> None:
    from fxscope.cli.formats import render
    from fxscope.report import filters

    from fxscope.report.locations import relative_file

    report = filters.apply_suppressions(ws.report(paths), root, dict(ws.snapshot().texts))
    if files is not None:  # only the findings of the files that changed, and their summary
        rels = {relative_file(str(f), root) or str(f) for f in files}
        out.write(f"--- {time.strftime('%H:%M:%S')} {', '.join(sorted(rels))} changed\n")
        report = filters.recount(report, [f for f in report.findings if f.primary.file in rels])
    out.write(render(report, "text", color=color, root=root))
    out.flush()


def watch(root: Path, paths: list[Path] | None, *, settings: SessionSettings, color: bool = False,
          out: TextIO | None = None, stop: threading.Event | None = None) -> int:
    """Watch ``root`` until interrupted (SIGINT, SIGTERM or ``stop``); returns the exit status 0.

    Prints the full text report once, then, whenever the session goes idle after a change, the
    report again headed by the files whose findings changed."""
    out = out or sys.stdout
    stop = stop or threading.Event()
    changes = _Changes()
    disk = threading.Event()
    warnings: list[str] = []

    def warn(message: str) -> None:
        sys.stderr.write(f"fxscope: warning: {message}\n")
        sys.stderr.flush()
        warnings.append(message)

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: stop.set())
    with Workspace(root, settings=settings, on_results=changes.add, on_warning=warn) as ws:
        observer = _observer(root, ws, disk)
        try:
            ws.start()
            while not ws.wait_idle(0.2):
                if stop.is_set():
                    return 0
            changes.take()
            out.write(f"fxscope: watching {root} ({ws.status().total} targets); Ctrl-C to stop\n")
            _print_report(ws, root, paths, None, out, color)
            while not stop.is_set():
                if not (changes.event.wait(0.2) or disk.is_set()):
                    continue
                disk.clear()
                if not ws.wait_idle(0.2):
                    continue  # still debouncing or tracing: print once it settles
                files = changes.take()
                if files:
                    _print_report(ws, root, paths, files, out, color)
        except KeyboardInterrupt:
            pass
        finally:
            observer.stop()
            observer.join(timeout=5)
    return 0
