"""A one-line progress bar on stderr, drawn only when it is a terminal.

>>> import io
>>> p = Progress(io.StringIO())   # not a TTY: prints nothing at all
>>> p.enabled
False
>>> with p:
...     p.start(2); p.update(1, 2, "m.py::Net")
"""

from __future__ import annotations

import shutil
import sys
import threading
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``[#####.....] 12/50 models/gpt.py::GPT``, redrawn in place with ``\\r`` and cleared by
    :meth:`finish`. Thread-safe; disabled (silent) when ``stream`` is not a TTY."""

    def __init__(self, stream: TextIO | None = None, *, enabled: bool | None = None, width: int = 20) -> None:
        self.stream = stream if stream is not None else sys.stderr
        if enabled is None:
            try:
                enabled = bool(self.stream.isatty())
            except (AttributeError, ValueError, OSError):
                enabled = False
        self.enabled = enabled
        self.width = width
        self._drawn = 0  # characters currently on the line
        self._lock = threading.Lock()

    def start(self, total: int) -> None:
        """Begin with ``total`` jobs (draws an empty bar)."""
        self.update(0, total, "")

    def update(self, done: int, total: int, current: str = "") -> None:
        """Show ``done`` of ``total`` finished, ``current`` being worked on."""
        if not self.enabled:
            return
        total = max(total, 0)
        filled = self.width * min(done, total) // total if total else 0
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {done}/{total}"
        if current:
            line += f" {current}"
        columns = shutil.get_terminal_size((80, 24)).columns
        line = line[: max(columns - 1, 0)]
        self._write(line)

    def finish(self) -> None:
        """Erase the bar, leaving the cursor at the start of an empty line."""
        if self.enabled:
            self._write("")

    def _write(self, line: str) -> None:
        with self._lock:
            pad = " " * max(self._drawn - len(line), 0)
            self.stream.write("\r" + line + pad + ("" if line else "\r"))
            self.stream.flush()
            self._drawn = len(line)

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()
