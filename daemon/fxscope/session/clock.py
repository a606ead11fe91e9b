"""The scheduler's time source: the real monotonic clock, or a manual one injected by tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

__all__ = ["Clock", "MonotonicClock", "Timer"]


# ------------------------------------------------------------------------------------------ clock
class Timer(Protocol):
    """A scheduled callback; :meth:`cancel` before it fires prevents it."""

    def cancel(self) -> None: ...


class Clock(Protocol):
    """Time for the scheduler: ``now()`` in seconds and ``call_later(delay, fn)``. Tests inject a
    manual clock and advance it, so they never sleep through a debounce."""

    def now(self) -> float: ...

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer: ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` and a daemon ``threading.Timer`` per callback."""

    def now(self) -> float:
        """Seconds (monotonic)."""
        return time.monotonic()

    def call_later(self, delay: float, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` on a timer thread after ``delay`` seconds."""
        timer = threading.Timer(max(delay, 0.0), fn)
        timer.daemon = True
        timer.start()
        return timer
