"""The long-lived core that every front end shares: one :class:`Workspace` per root.

The socket daemon, ``fxscope watch`` and the language server are thin transports over it. A
Workspace wires parts with one owner each: the open documents (:class:`.DocumentStore`, the
only place versions live), the files and targets (:class:`.TargetSet`), the debounced
:class:`.Scheduler` (the only code that starts threads) and the :class:`.ResultStore` (typed
outcomes indexed once per file); it owns the configuration (reloaded when ``pyproject.toml``
changes, keeping the warm worker pool when only unrelated keys change) and the engine. Nothing
here imports torch.

Positions are 1-based lines and 1-based code-point columns (``fxscope.lsp.positions`` converts
them for LSP clients). Callbacks (``on_results``, ``on_progress``, ``on_warning``) may be called
from worker threads.

Example::

    ws = Workspace(root, on_results=lambda ev: print(ev.files))
    ws.start()                              # cached results first, then every target in background
    ws.change(root / "m.py", 2, new_text)   # debounced re-trace of the targets that depend on m.py
    ws.wait_idle(60)
    ws.findings_for(root / "m.py").findings
    ws.close()
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from fxscope.engine.engine import Engine
from fxscope.engine.results import TargetResult
from fxscope.errors import CheckError, CheckInterrupted
from fxscope.graphview.document import GraphDocument
from fxscope.model import ClassSummary, GraphView, NodeInfo, Report, Snapshot
from fxscope.project.config import Config, ConfigError
from fxscope.project.discovery import Discovery, Target
from fxscope.project.files import EXAMPLE_SUFFIXES
from fxscope.report.factories import FactoryPlan, plans_from_results
from fxscope.session.clock import Clock, MonotonicClock
from fxscope.session.data import FileFindings, ProgressEvent, ResultsEvent, SessionSettings, WorkspaceStatus
from fxscope.session.documents import DocumentChange, DocumentStore
from fxscope.session.engine_host import EngineHost, Events
from fxscope.session.linemap import LineEdit
from fxscope.session.rounds import Rounds
from fxscope.session.scheduler import Scheduler
from fxscope.session.store import ResultStore
from fxscope.session.targets import TargetSet

__all__ = ["Workspace"]


class Workspace:
    """One workspace root's long-lived state (see the module docstring).

    Args:
        root: the workspace root (holding ``pyproject.toml``, or not).
        settings: front-end settings merged over the config.
        clock: the scheduler's clock (default :class:`MonotonicClock`).
        on_results: told which files' findings changed (with those findings), per result.
        on_progress: scheduler progress.
        on_warning: one-line warnings (config errors, preload failures, corrupt cache rebuilt).
        on_error: a round, or the worker's start-up, ended with this error (e.g.
            :class:`~fxscope.errors.TorchUnavailableError`); without it, a warning.

    Raises :class:`~fxscope.project.config.ConfigError` when ``pyproject.toml`` is invalid at
    start; a later invalid edit keeps the previous configuration and sets ``status().config_error``.
    """

    def __init__(self, root: Path, *, settings: SessionSettings | None = None, clock: Clock | None = None,
                 on_results: Callable[[ResultsEvent], None] | None = None,
                 on_progress: Callable[[ProgressEvent], None] | None = None,
                 on_warning: Callable[[str], None] | None = None,
                 on_error: Callable[[CheckError], None] | None = None) -> None:
        self.root = Path(root).resolve()
        events = Events(on_results, on_warning, on_error)
        self.documents = DocumentStore()
        self.targets = TargetSet()
        self.store = ResultStore(self.root)
        self._life = EngineHost(self.root, settings or SessionSettings(), events)
        self._rounds = Rounds(self._life, self.documents, self.targets, self.store, events)
        self.scheduler = Scheduler(self._rounds, clock or MonotonicClock(), debounce_s=self.settings.debounce_s,
                                   enabled=self.settings.enabled, on_progress=on_progress,
                                   on_error=self._rounds.failed)

    # -- lifecycle -------------------------------------------------------------------------------
    @property
    def settings(self) -> SessionSettings:
        """The front-end settings in use."""
        return self._life.settings

    @property
    def engine(self) -> Engine:
        """The engine in use (replaced when the configuration changes)."""
        return self._life.engine

    @property
    def config(self) -> Config:
        """The configuration in use (settings merged over ``[tool.fxscope]``)."""
        return self._life.engine.config

    def start(self, *, warm: bool = True) -> None:
        """Load cached results (no torch), then check every target in the background; ``warm``
        also starts the worker zygote now, so the first edit does not wait for torch."""
        self._life.check_open()
        self.targets.rescan()  # a full walk, once
        # the round is planned first: its discovery names the installed libraries the workspace
        # imports, which the zygote then imports once, instead of every job importing them
        self.scheduler.request_all(self.documents.snapshot().generation, at_once=True)
        if warm and self.settings.enabled:
            self.warm()

    def warm(self, *, wait: bool = False) -> None:
        """Start the worker zygote now (in the background unless ``wait``); ``status().worker`` is
        ``starting`` until it is ready."""
        self._life.starting()
        if wait:
            self._life.warm()
        else:
            self.scheduler.background(self._life.warm, "fxscope-warm")

    def update_settings(self, settings: SessionSettings) -> None:
        """Apply new front-end settings (a changed worker count, timeout or cache directory
        rebuilds the engine, keeping the warm pool when it fits)."""
        recheck = self._life.update_settings(settings)
        self.scheduler.configure(debounce_s=settings.debounce_s, enabled=settings.enabled)
        if recheck:
            self.scheduler.request_all(self.documents.snapshot().generation)

    def reload_config(self) -> str | None:
        """Re-read ``pyproject.toml`` when it changed (re-checking every target, keeping the warm pool
        when ``preload`` and the worker count are the same); the error when it is now invalid."""
        error, changed = self._life.reload_config()
        if changed:
            self.targets.rescan()  # include/exclude or python-path may have changed
            self.scheduler.request_all(self.documents.snapshot().generation)
        return error

    def close(self, path: Path | None = None) -> None:
        """``close(path)``: the editor closed that document (its disk text counts again).
        ``close()``: shut the workspace down, killing every child; no process is left."""
        if path is not None:
            if not self.scheduler.closed:
                self._edited(path, self.documents.close(self._key(path)), always=True)
            return
        if self._life.close():
            self.scheduler.close()
            self._life.engine.close()  # kills running children; their rounds end with cancelled jobs
            self.scheduler.wait_rounds(10)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- documents -------------------------------------------------------------------------------
    def _key(self, path: Path) -> str:
        return str(Path(path) if Path(path).is_absolute() else Path(path).absolute())

    def _rel(self, path: Path | str) -> str:
        return self._life.rel(path)

    def open(self, path: Path, version: int, text: str) -> None:
        """An editor opened ``path`` at ``version`` with ``text`` (re-traced only when the text
        differs from the disk)."""
        self._life.check_open()
        self._edited(path, self.documents.open(self._key(path), version, text))

    def change(self, path: Path, version: int, text: str, edits: Sequence[LineEdit] | None = None) -> None:
        """The buffer of ``path`` is now ``text`` at ``version``: debounced re-trace of the targets
        that depend on it (their running jobs for older snapshots are killed); nothing while it
        does not parse (its last results stay). ``edits``: how its lines moved (None: a line diff
        with the previous text finds them)."""
        self._life.check_open()
        self._edited(path, self.documents.change(self._key(path), version, text, edits))

    def save(self, path: Path, text: str | None = None) -> None:
        """``path`` was saved (with ``text`` when the client sends it)."""
        self._life.check_open()
        change = self.documents.save(self._key(path), text)
        if self.settings.trace_on == "save":
            self._changed(self._rel(self._key(path)), change.snapshot.generation)

    def _edited(self, path: Path, change: DocumentChange, *, always: bool = False) -> None:
        if change.files and (always or self.settings.trace_on == "type"):
            self._changed(self._rel(self._key(path)), change.snapshot.generation)

    def _changed(self, rel: str, generation: int, *, urgent: bool = True) -> None:
        """``rel`` changed: re-run what it affects; ``urgent`` (an edit) puts the targets of the
        edited file itself first."""
        affected = self._rounds.affected(rel)
        first = frozenset(t for t in affected if self.targets.file_of(t) == rel) if urgent else frozenset()
        self.scheduler.changed(rel, affected, generation, urgent=first)

    def files_changed(self, paths: Iterable[Path]) -> None:
        """Files changed on disk (watchdog, ``workspace/didChangeWatchedFiles``): open buffers
        win; ``pyproject.toml`` reloads the config; others re-run the targets that depend on them."""
        self._life.check_open()
        for path in paths:
            ab = Path(path) if Path(path).is_absolute() else self.root / path
            if ab == self.root / "pyproject.toml":
                self.reload_config()
                continue
            rel = self._rel(ab)
            if not ab.name.endswith((".py", ".ipynb", *EXAMPLE_SUFFIXES)) or rel.startswith(("/", "../")):
                continue
            self._life.engine.hasher.invalidate(rel)
            self.targets.file_changed(self.config, rel, ab)
            if self.documents.is_open(self._key(ab)) and self.settings.trace_on == "type":
                continue  # the open buffer is what counts
            self._changed(rel, self.documents.snapshot().generation, urgent=False)

    def snapshot(self) -> Snapshot:
        """The current immutable snapshot: open buffer texts, versions, generation."""
        return self.documents.snapshot()

    # -- results ---------------------------------------------------------------------------------
    def deliver(self, result: TargetResult, snapshot: Snapshot, discovery: Discovery | None = None) -> bool:
        """Store ``result``, computed for ``snapshot``, unless a result of a newer snapshot is
        already stored (then False: nothing older ever replaces something newer); tells
        ``on_results`` which files' findings changed. The scheduler delivers every result here."""
        return self._rounds.deliver(result, snapshot, discovery)

    def results(self) -> list[TargetResult]:
        """The latest result of every target (memory only)."""
        return self.store.results()

    def report(self, paths: Iterable[Path] | None = None, *, target_ids: Iterable[str] | None = None,
               graphs: bool = False, duration_ms: float | None = None) -> Report:
        """The version-1 report of the stored results (of the targets under ``paths``, or with
        ``target_ids``), as ``fxscope check`` makes it (suppressions are the caller's to apply)."""
        if duration_ms is None:
            duration_ms = self.scheduler.counts().last_duration_ms or 0.0
        return self._rounds.report(paths, target_ids, graphs=graphs, duration_ms=duration_ms)

    def findings_for(self, path: Path) -> FileFindings:
        """Merged findings of every target for ``path`` (suppressions read from its buffer), at
        their lines in its buffer (see :meth:`ResultStore.findings_for`)."""
        key = self._key(path)
        return self.store.findings_for(self._rel(key), key, self.documents.snapshot(), self.documents.view())

    def files_with_findings(self) -> list[Path]:
        """Every file that has at least one finding (absolute paths; suppressions not applied)."""
        return [Path(rel) if rel.startswith("/") else self.root / rel for rel in self.store.files_with_findings()]

    def nodes_at(self, path: Path, line: int) -> list[NodeInfo]:
        """Graph nodes produced by ``line`` of ``path`` (a line of its buffer), over every target
        and instance; none for a line inserted or edited since its targets were traced."""
        return self.store.nodes_at(self._rel(self._key(path)), line, self.documents.view())

    def classes_in(self, path: Path) -> list[ClassSummary]:
        """A summary per ``nn.Module`` class defined in ``path`` (targets of that file, and classes
        met as modules of traced models), in line order, at their lines in its buffer."""
        key = self._key(path)
        rel, view = self._rel(key), self.documents.view()
        own = self.targets.class_targets(rel)
        if view.tracks(key):
            lines = view.line_map(key, self.targets.discovered_version(key))
            moved = [(t, lines.line(t.line) if lines is not None else None) for t in own]
            own = [t if line == t.line else replace(t, line=line) for t, line in moved if line is not None]
        return self.store.classes_in(rel, own, self.scheduler.is_target_pending, view)

    def target_status(self, target_id: str) -> str:
        """A target's status (``pending`` while it is traced or before its first result).
        Raises KeyError for a target the discovery does not know."""
        pending = self._pending(target_id)
        return "pending" if pending else self.store.status(target_id) or "pending"

    def _pending(self, target_id: str) -> bool:
        """Whether ``target_id`` is being traced now; KeyError when it is unknown."""
        if self.store.get(target_id) is None and target_id not in self.targets.ids():
            raise KeyError(target_id)
        return self.scheduler.is_running(target_id)

    def graph(self, target_id: str, module: str | None = None) -> GraphView:
        """The nodes and findings of one target (one module's graph when ``module`` is given).
        Raises KeyError for an unknown target."""
        return self.store.graph(target_id, module, self._pending(target_id))

    def graph_document(self, target_id: str, module: str | None = None) -> GraphDocument:
        """The graph document (version 1, docs/graph-format.md) of one target, or of one module
        in it, as the HTML report draws it: graphs, the modules with their status, the target's
        findings. ``status`` is ``pending`` while it is being traced or was never traced. Raises
        KeyError for an unknown target, GraphModuleError for a module it does not have."""
        return self.store.graph_document(target_id, module, self._pending(target_id), self.documents.view())

    def target_for_class(self, path: Path, line: int) -> str | None:
        """The id of the class target defined at ``line`` of ``path`` (a line of its buffer) or
        whose body holds that line."""
        key = self._key(path)
        lines = self.documents.view().line_map(key, self.targets.discovered_version(key))
        found_line = lines.back(line) if lines is not None else None
        found = self.targets.class_target_at(self._rel(key), found_line) if found_line is not None else None
        return found.id if found is not None else None

    def factory_plan(self, path: Path, line: int) -> FactoryPlan | None:
        """How to pin the class target defined at ``line`` of ``path`` as a factory target (``fxscope
        init`` for one class); None for a class built from its defaults, covered, or not traced yet."""
        tid = self.target_for_class(path, line)
        stored = self.store.get(tid) if tid is not None else None
        key = self._key(path)
        lines = self.documents.view().line_map(key, stored.versions.get(self._rel(key))) if stored else None
        if stored is None or lines is None or lines.line(stored.result.target.line) != line:
            return None
        plans = plans_from_results([stored.result])
        return plans[0] if plans else None

    def is_pending(self, path: Path) -> bool:
        """Whether a trace that may change the findings of ``path`` is debouncing, queued or
        running."""
        return self.scheduler.is_pending(self._rel(self._key(path)))

    # -- commands --------------------------------------------------------------------------------
    def retrace(self, paths: Iterable[Path] | None = None) -> None:
        """Re-run the targets under ``paths`` (all when None), faults included, ignoring the cache."""
        self._run_now(paths, None, use_cache=False)

    def _run_now(self, paths: Iterable[Path] | None, shard: tuple[int, int] | None, *, use_cache: bool,
                 retry_faults: bool = False) -> tuple[list[Target], int]:
        """Start a round for the targets under ``paths`` (and in ``shard``) now, no debounce;
        those targets and the snapshot generation the round computes for."""
        plan, targets = self._rounds.plan_now(paths, shard, use_cache=use_cache, retry_faults=retry_faults)
        self.scheduler.run_now(plan)
        return targets, plan.generation

    def check(self, paths: Iterable[Path] | None = None, *, graphs: bool = False,
              shard: tuple[int, int] | None = None, use_cache: bool = True, retry_faults: bool = False,
              timeout: float | None = None) -> Report:
        """Bring the targets under ``paths`` (and in ``shard``) up to date now, the config and the
        file list re-read first, and return their version-1 report, as ``fxscope check`` does; for
        request/response front ends (the socket daemon). Raises ConfigError when
        ``pyproject.toml`` is invalid and CheckError when the check could not complete."""
        error = self.reload_config()
        if error is not None:
            raise ConfigError(error)
        paths = list(paths) if paths is not None else None
        self.targets.rescan()  # a batch check sees files created since (no watcher is assumed)
        self.scheduler.take_error()
        started = time.perf_counter()
        targets, generation = self._run_now(paths, shard, use_cache=use_cache, retry_faults=retry_faults)
        if not self.wait_idle(timeout):
            raise CheckError(f"the check did not finish within {timeout:g} s")
        failed = self.scheduler.take_error()
        missing = [t.id for t in targets  # no result, or only an older one (its job was cancelled)
                   if self.store.stored_generation(t.id) < generation]
        if failed is not None:
            raise failed
        if self.scheduler.closed or missing:  # stopped under it: never a shorter report
            raise CheckInterrupted(
                f"the check was interrupted before every target had a result ({len(missing)} of "
                f"{len(targets)} missing{': ' + missing[0] if missing else ''}): the daemon or its "
                "workers were stopped")
        return self.report(paths, target_ids=[t.id for t in targets], graphs=graphs,
                           duration_ms=(time.perf_counter() - started) * 1000)

    def cancel(self, *, spare_edits: bool = False) -> None:
        """Kill every running job; their targets keep their previous results (a ``check`` in
        progress raises CheckInterrupted). Nothing is re-run until the next change. With
        ``spare_edits`` (the editor's cancel of a progress), the jobs of the targets an edit asked
        for and that have no result of it yet go on: only the background work stops."""
        self.scheduler.cancel(self.documents.next_generation().generation, spare_edits=spare_edits)

    def clear_cache(self) -> None:
        """Empty the result cache (the in-memory results stay until re-traced)."""
        self._life.engine.cache.clear()

    def status(self) -> WorkspaceStatus:
        """Targets total/done/running, last duration, worker state."""
        counts = self.scheduler.counts()
        worker, torch = self._life.worker()
        return WorkspaceStatus(self.root, counts.total, counts.done, counts.running, counts.queued,
                               self.documents.snapshot().generation, counts.last_duration_ms, worker,
                               self._life.config_error, counts.checks, torch, self._life.sandbox())

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is debouncing, queued or running; False on timeout. With a manual
        clock a pending debounce only ends when the clock is advanced."""
        return self.scheduler.wait_idle(timeout)
