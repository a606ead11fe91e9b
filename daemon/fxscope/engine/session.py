"""The long-lived core that every front end shares: one :class:`Workspace` per root.

The socket daemon, ``fxscope watch`` and the language server are thin transports over it. A
Workspace owns the engine (config reloaded when ``pyproject.toml`` changes, keeping the warm worker
pool when only unrelated keys change), the open documents (versioned, immutable
:class:`~fxscope.model.Snapshot` objects handed down to the engine), a debounced scheduler that
cancels stale jobs per target, and a result store answered from memory and the JSON cache,
never importing torch in this process.

Positions in the store are 1-based lines and 1-based code-point columns
(``fxscope.lsp.positions`` converts them for LSP clients).

Example::

    ws = Workspace(root, on_results=lambda ev: print(ev.files))
    ws.start()                              # cached results first, then every target in background
    ws.change(root / "m.py", 2, new_text)   # debounced re-trace of the targets that depend on m.py
    ws.wait_idle(60)
    ws.findings_for(root / "m.py").findings
    ws.close()

Callbacks (``on_results``, ``on_progress``, ``on_warning``) may be called from worker threads.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from fxscope.model import ClassSummary, Finding, GraphView, NodeInfo, Snapshot

__all__ = [
    "Clock",
    "FileFindings",
    "MonotonicClock",
    "ProgressEvent",
    "ResultsEvent",
    "SessionSettings",
    "Timer",
    "Workspace",
    "WorkspaceStatus",
]


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


# ------------------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class SessionSettings:
    """Front-end settings, merged over ``[tool.fxscope]`` (None keeps the config's value).

    ``debounce_s``: quiet time after the last change before re-tracing; ``trace_on``: ``"type"``
    re-traces unsaved buffers, ``"save"`` only saved files; ``workers``/``timeout`` override the
    config; ``enabled`` False keeps the store but runs nothing; ``cache_dir`` overrides the cache
    directory; ``use_cache`` False traces everything once (``--no-cache``)."""

    debounce_s: float = 0.3
    trace_on: str = "type"
    workers: int | None = None
    timeout: float | None = None
    enabled: bool = True
    cache_dir: Path | None = None
    use_cache: bool = True


@dataclass(frozen=True)
class ResultsEvent:
    """Findings changed for ``files`` (absolute paths); the store is at ``generation``."""

    files: tuple[Path, ...]
    generation: int
    targets: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProgressEvent:
    """Scheduler progress: ``done`` of ``total`` targets of the current round, ``running`` jobs,
    the last finished ``target`` (None at the start of a round)."""

    done: int
    total: int
    running: int
    target: str | None
    generation: int


@dataclass(frozen=True)
class FileFindings:
    """The merged findings of every target for one file, suppressions applied from the buffer.

    ``version``: the document version they were computed for (None: the disk, or never traced);
    ``generation``: the store generation; ``result_id``: changes exactly when the findings change
    (for LSP pull diagnostics)."""

    path: Path
    findings: tuple[Finding, ...]
    version: int | None
    generation: int
    result_id: str


@dataclass(frozen=True)
class WorkspaceStatus:
    """Targets ``total``, ``done`` (have a current result), ``running``, ``queued``; the last
    round's duration; the worker state (``idle``, ``starting``, ``ready``, ``failed: ...``); a
    configuration error, when pyproject.toml is invalid (the previous config stays in use)."""

    root: Path
    total: int
    done: int
    running: int
    queued: int
    generation: int
    last_duration_ms: float | None
    worker: str
    config_error: str | None = None
    checks: int = 0
    torch: str = "unknown"
    extra: dict[str, object] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------ workspace
class Workspace:
    """One workspace root's long-lived state (see the module docstring).

    Args:
        root: the workspace root (holding ``pyproject.toml``, or not).
        settings: front-end settings merged over the config.
        clock: the scheduler's clock (default :class:`MonotonicClock`).
        on_results: told which files' findings changed, per finished target.
        on_progress: scheduler progress.
        on_warning: one-line warnings (config errors, preload failures, corrupt cache rebuilt).
    """

    def __init__(self, root: Path, *, settings: SessionSettings | None = None, clock: Clock | None = None,
                 on_results: Callable[[ResultsEvent], None] | None = None,
                 on_progress: Callable[[ProgressEvent], None] | None = None,
                 on_warning: Callable[[str], None] | None = None) -> None:
        raise NotImplementedError

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Load cached results (no torch), then check every target in the background."""
        raise NotImplementedError

    def update_settings(self, settings: SessionSettings) -> None:
        """Apply new front-end settings (a changed worker count or timeout rebuilds the engine,
        keeping the warm pool when it fits)."""
        raise NotImplementedError

    def close(self, path: Path | None = None) -> None:
        """``close(path)``: the editor closed that document (its disk text counts again).
        ``close()``: shut the workspace down, killing every child; no process is left."""
        raise NotImplementedError

    # -- documents -------------------------------------------------------------------------------
    def open(self, path: Path, version: int, text: str) -> None:
        """An editor opened ``path`` at ``version`` with ``text``."""
        raise NotImplementedError

    def change(self, path: Path, version: int, text: str) -> None:
        """The buffer of ``path`` is now ``text`` at ``version``: debounced re-trace of the targets
        that depend on it (cancelling their running jobs for older snapshots)."""
        raise NotImplementedError

    def save(self, path: Path, text: str | None = None) -> None:
        """``path`` was saved (with ``text`` when the client sends it)."""
        raise NotImplementedError

    def files_changed(self, paths: Iterable[Path]) -> None:
        """Files changed on disk (watchdog, ``workspace/didChangeWatchedFiles``): open buffers
        win; ``pyproject.toml`` reloads the config; others re-run the targets that depend on them."""
        raise NotImplementedError

    def snapshot(self) -> Snapshot:
        """The current immutable snapshot: open buffer texts, versions, generation."""
        raise NotImplementedError

    # -- queries (memory only, no torch) ---------------------------------------------------------
    def findings_for(self, path: Path) -> FileFindings:
        """Merged findings of every target for ``path`` (suppressions read from its buffer)."""
        raise NotImplementedError

    def files_with_findings(self) -> list[Path]:
        """Every file that has at least one finding (absolute paths)."""
        raise NotImplementedError

    def nodes_at(self, path: Path, line: int) -> list[NodeInfo]:
        """Graph nodes produced by ``line`` of ``path``, over every target and instance."""
        raise NotImplementedError

    def classes_in(self, path: Path) -> list[ClassSummary]:
        """A summary per ``nn.Module`` class defined in ``path`` (hover, code lens)."""
        raise NotImplementedError

    def graph(self, target_id: str, module: str | None = None) -> GraphView:
        """The nodes and findings of one target (one module's graph when ``module`` is given)."""
        raise NotImplementedError

    def target_for_class(self, path: Path, line: int) -> str | None:
        """The id of the target that traces the class defined at or around ``line`` of ``path``."""
        raise NotImplementedError

    # -- commands --------------------------------------------------------------------------------
    def retrace(self, paths: Iterable[Path] | None = None) -> None:
        """Re-run the targets under ``paths`` (all when None), faults included, ignoring the cache."""
        raise NotImplementedError

    def clear_cache(self) -> None:
        """Empty the result cache (the in-memory results stay until re-traced)."""
        raise NotImplementedError

    def status(self) -> WorkspaceStatus:
        """Targets total/done/running, last duration, worker state."""
        raise NotImplementedError

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is debouncing, queued or running; False on timeout. A pending
        debounce is not waited for when the clock is manual (advance it first)."""
        raise NotImplementedError
