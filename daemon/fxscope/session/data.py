"""The session's public data: front-end settings, the events it reports, its per-file findings
and its status."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fxscope.model import Finding
from fxscope.model.sandbox import SandboxStatus

__all__ = ["FileFindings", "ProgressEvent", "ResultsEvent", "SessionSettings", "WorkspaceStatus"]


# ------------------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class SessionSettings:
    """Front-end settings, merged over ``[tool.fxscope]`` (None keeps the config's value).

    ``debounce_s``: quiet time after the last change of a burst before re-tracing (the first
    change after such a quiet time re-traces at once); ``trace_on``: ``"type"``
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
    """The findings of ``files`` (absolute paths) changed, or the document version they are for
    did; ``findings`` holds their new :class:`FileFindings` (one per file, same order), so a
    front end shows them without asking back. The snapshot is at ``generation``; ``targets``
    are the targets whose results caused it."""

    files: tuple[Path, ...]
    generation: int
    targets: tuple[str, ...] = ()
    findings: tuple[FileFindings, ...] = ()


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
    #: Whether the workspace's code runs in the OS sandbox (see ``fxscope.worker.sandbox``).
    sandbox: SandboxStatus | None = None
