"""The session's public data: front-end settings, the events it reports, its per-file findings
and its status."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from fxscope.model import Finding
from fxscope.model.sandbox import SandboxStatus

__all__ = ["DEFAULT_DEBOUNCE_S", "FileFindings", "ProgressEvent", "ResultsEvent", "RunSummary", "SessionSettings",
           "WorkspaceStatus"]


#: Quiet time after the last change of a burst before the re-check, for every front end (the
#: editor, ``watch``, the daemon): the first change after a quiet period is checked at once, and a
#: newer change cancels the stale jobs, so a longer wait never saves a wrong result, only adds to
#: the latency of the burst's last edit (the edit-latency budget counts it).
DEFAULT_DEBOUNCE_S = 0.05


# ------------------------------------------------------------------------------------------ data
@dataclass(frozen=True)
class SessionSettings:
    """Front-end settings, merged over ``[tool.fxscope]`` (None keeps the config's value).

    ``debounce_s``: quiet time after the last change of a burst before re-tracing (the first
    change after such a quiet time re-traces at once); ``trace_on``: ``"type"``
    re-traces unsaved buffers, ``"save"`` only saved files; ``workers``/``timeout`` override the
    config; ``enabled`` False keeps the store but runs nothing; ``cache_dir`` overrides the cache
    directory; ``use_cache`` False traces everything once (``--no-cache``); ``sandbox`` False runs
    the workspace's code without the OS sandbox (``--no-sandbox``; None: the config's ``sandbox``)."""

    debounce_s: float = DEFAULT_DEBOUNCE_S
    trace_on: str = "type"
    workers: int | None = None
    timeout: float | None = None
    enabled: bool = True
    cache_dir: Path | None = None
    use_cache: bool = True
    sandbox: bool | None = None


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
class RunSummary:
    """What the rounds between two idle times did: ``targets`` with a new result (from the cache
    or traced), ``cached`` ones, ``errors`` (traced with error findings), ``failed`` (could not be
    imported, built or traced: FXS401-404), ``cancelled`` (killed, by the user or a shutdown, with
    no result since), ``queued`` (still wanted after a cancel), and the wall time."""

    targets: int
    cached: int
    errors: int
    failed: int
    cancelled: int
    queued: int
    seconds: float

    def line(self) -> str:
        """One log line, e.g. ``42 targets (30 cached, 3 with errors, 1 failed to build) in 12.3 s``."""
        parts = [f"{self.cached} cached"]
        if self.errors:
            parts.append(f"{self.errors} with errors")
        if self.failed:
            parts.append(f"{self.failed} failed to build")
        if self.cancelled:
            parts.append(f"{self.cancelled} cancelled")
        if self.queued:
            parts.append(f"{self.queued} left queued")
        s = "" if self.targets == 1 else "s"
        return f"{self.targets} target{s} ({', '.join(parts)}) in {self.seconds:.1f} s"


@dataclass(frozen=True)
class ProgressEvent:
    """Scheduler progress: ``done`` of ``total`` targets of the rounds run since the last idle
    time (a target killed for a newer snapshot is not done until its new job is), ``running``
    ones, the last finished ``target`` (None at the start of a round), those whose fx phase
    ``answered`` (their compile/export analyses may still run); ``summary`` is set on the
    event that ends a busy period (nothing runs, is planned or debounces any more)."""

    done: int
    total: int
    running: int
    target: str | None
    generation: int
    summary: RunSummary | None = None
    #: Targets whose fx phase answered (``done`` ones, and those whose analyses phase runs now).
    answered: int = 0


@dataclass(frozen=True)
class FileFindings:
    """The merged findings of every target for one file, suppressions applied from the buffer.

    ``version``: the document version they were computed for (None: the disk, or never traced);
    ``generation``: the store generation; ``result_id``: changes exactly when the findings change
    (for LSP pull diagnostics); ``buffer_version``: the version of the open buffer whose lines
    they are at (mapped through the edits since ``version``; None: not mapped, a closed file or a
    notebook)."""

    path: Path
    findings: tuple[Finding, ...]
    version: int | None
    generation: int
    result_id: str
    buffer_version: int | None = None


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
