"""What the session tests share: a clock the test advances (no test sleeps through a debounce)
and a recorder of the session's callbacks."""

from __future__ import annotations

import threading
from collections.abc import Callable

from fxscope.session import ProgressEvent, ResultsEvent, Workspace

#: ``session(root, **settings)``: a Workspace with the test's clock and recorder (the fixture).
WorkspaceFactory = Callable[..., Workspace]

#: Seconds a round may take on a loaded 2-core machine (a limit, not a measurement).
IDLE = 180


class ManualClock:
    """A clock the test advances; due callbacks run synchronously inside :meth:`advance`."""

    def __init__(self) -> None:
        self.now_s = 0.0
        self._timers: list[ManualTimer] = []
        self._lock = threading.Lock()

    def now(self) -> float:
        return self.now_s

    def call_later(self, delay: float, fn: Callable[[], None]) -> ManualTimer:
        timer = ManualTimer(self.now_s + delay, fn)
        with self._lock:
            self._timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        self.now_s += seconds
        with self._lock:
            due = [t for t in self._timers if t.when <= self.now_s]
            self._timers = [t for t in self._timers if t.when > self.now_s and not t.cancelled]
        for t in due:
            if not t.cancelled:
                t.fn()

    def pending(self) -> int:
        """Timers armed and not cancelled."""
        with self._lock:
            return sum(1 for t in self._timers if not t.cancelled)


class ManualTimer:
    def __init__(self, when: float, fn: Callable[[], None]) -> None:
        self.when, self.fn, self.cancelled = when, fn, False

    def cancel(self) -> None:
        self.cancelled = True


class Recorder:
    """Collects the session's callbacks (called from worker threads)."""

    def __init__(self) -> None:
        self.results: list[ResultsEvent] = []
        self.progress: list[ProgressEvent] = []
        self.warnings: list[str] = []
        self.errors: list[Exception] = []
        self.lock = threading.Lock()

    def on_results(self, ev: ResultsEvent) -> None:
        with self.lock:
            self.results.append(ev)

    def on_progress(self, ev: ProgressEvent) -> None:
        with self.lock:
            self.progress.append(ev)

    def on_error(self, exc: Exception) -> None:
        with self.lock:
            self.errors.append(exc)

    def finished(self, since: int = 0) -> list[str]:
        """Targets that finished (result or cancelled) in progress events after index ``since``."""
        with self.lock:
            return [ev.target for ev in self.progress[since:] if ev.target is not None]

    def mark(self) -> int:
        with self.lock:
            return len(self.progress)
