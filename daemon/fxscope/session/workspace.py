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

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fxscope.cache import hash_json
from fxscope.engine.engine import Engine
from fxscope.engine.results import TargetResult, drop_covered_skips
from fxscope.errors import CheckError, CheckInterrupted
from fxscope.graphview.document import GraphDocument, build_document
from fxscope.model import ClassSummary, Finding, GraphView, NodeInfo, Snapshot
from fxscope.project.config import Config, ConfigError, load_config
from fxscope.project.discovery import Discovery, Target, discover
from fxscope.project.files import is_example, is_included, relpath, workspace_files
from fxscope.report.build import build_report, file_error_finding, merge_findings, target_findings
from fxscope.report.filters import is_suppressed
from fxscope.report.locations import SourceCache, primary_location
from fxscope.session.clock import Clock, MonotonicClock
from fxscope.session.data import FileFindings, ProgressEvent, ResultsEvent, SessionSettings, WorkspaceStatus

__all__ = ["Workspace"]


# ------------------------------------------------------------------------------------------ store
@dataclass
class _Stored:
    """One target's latest result in the store, with the snapshot it was computed from."""

    result: TargetResult
    generation: int
    findings: list[dict[str, Any]]  # report findings (root-relative, ``target`` set)
    deps: frozenset[str]  # root-relative files the result depends on
    versions: dict[str, int | None]  # document versions (by rel) of the snapshot, for its deps


def _deps_of(result: TargetResult, discovery: Discovery | None) -> frozenset[str]:
    files = set(result.body.get("files") or ())
    t = result.target
    if t.file:
        files.add(t.file)
        if discovery is not None and not result.body.get("files"):
            todo = [t.file]
            while todo:  # no recorded files (skipped, fault): the static imports
                for dep in discovery.imports.get(todo.pop(), ()):
                    if dep not in files:
                        files.add(dep)
                        todo.append(dep)
    return frozenset(f for f in files if not f.endswith("/"))


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

    Raises :class:`~fxscope.project.config.ConfigError` when ``pyproject.toml`` is invalid at
    start; a later invalid edit keeps the previous configuration and sets ``status().config_error``.
    """

    def __init__(self, root: Path, *, settings: SessionSettings | None = None, clock: Clock | None = None,
                 on_results: Callable[[ResultsEvent], None] | None = None,
                 on_progress: Callable[[ProgressEvent], None] | None = None,
                 on_warning: Callable[[str], None] | None = None) -> None:
        self.root = Path(root).resolve()
        self.settings = settings or SessionSettings()
        self.clock: Clock = clock or MonotonicClock()
        self._on_results = on_results or (lambda ev: None)
        self._on_progress = on_progress or (lambda ev: None)
        self._on_warning = on_warning or (lambda msg: None)
        self._lock = threading.RLock()
        self._idle = threading.Condition(self._lock)
        self._config_sig = _signature(self.root / "pyproject.toml")
        self._base_config = load_config(self.root)
        self._config_error: str | None = None
        self._engine = self._new_engine(self._base_config)
        # documents
        self._docs: dict[str, tuple[int | None, str]] = {}
        self._generation = 0
        self._snapshot = Snapshot.of({}, {}, generation=0)
        # discovery
        self._files: set[str] | None = None
        self._discovery: Discovery | None = None
        self._known: frozenset[str] | None = None  # target ids of _discovery
        # scheduler
        self._pending: set[str] = set()  # changed root-relative files awaiting the debounce
        self._pending_all = False
        self._timer: Timer | None = None
        self._last_edit: float | None = None  # clock time of the last change (leading edge)
        self._requested: dict[str, int] = {}  # target id -> newest generation it must reflect
        self._running: dict[str, int] = {}  # target id -> generation of its running round
        self._rounds = 0
        self._round_total = self._round_done = 0
        self._last_duration_ms: float | None = None
        self._round_started: float | None = None
        self._worker_state = "idle"
        self._checks = 0
        self._closed = False
        self._round_error: Exception | None = None
        self._cancel_below = 0  # rounds of older generations are cancelled (cancel())
        # store
        self._results: dict[str, _Stored] = {}
        self._by_file: dict[str, dict[str, list[dict[str, Any]]]] = {}  # rel -> target -> findings
        self._nodes: dict[str, dict[int, list[NodeInfo]]] = {}  # rel -> line -> nodes
        self._node_files: dict[str, set[str]] = {}  # target -> rels in _nodes
        self._unindexed: set[str] = set()  # targets whose stored nodes are not in _nodes yet
        self._store_version = 0
        self._memo: dict[str, tuple[tuple[int, int], FileFindings]] = {}

    # -- lifecycle -------------------------------------------------------------------------------
    def _new_engine(self, config: Config, old: Engine | None = None) -> Engine:
        s = self.settings
        if s.timeout is not None and s.timeout != config.timeout:
            config = dataclasses.replace(config, timeout=float(s.timeout))
        engine = Engine(self.root, config, cache_dir=s.cache_dir, workers=s.workers, on_warning=self._warn)
        if old is not None:
            if not engine.adopt_workers(old):
                self._worker_state = "idle"
            old.close()
        return engine

    @property
    def engine(self) -> Engine:
        """The engine in use (replaced when the configuration changes)."""
        return self._engine

    @property
    def config(self) -> Config:
        """The configuration in use (settings merged over ``[tool.fxscope]``)."""
        return self._engine.config

    def _warn(self, message: str) -> None:
        self._on_warning(message)

    def start(self, *, warm: bool = True) -> None:
        """Load cached results (no torch), then check every target in the background; ``warm``
        also starts the worker zygote now, so the first edit does not wait for torch."""
        with self._lock:
            self._check_open()
            self._files = None  # a full walk, once
            self._pending_all = True
            self._requested_all()
        if warm and self.settings.enabled:
            self.warm()
        self._flush()

    def warm(self, *, wait: bool = False) -> None:
        """Start the worker zygote now (in the background unless ``wait``), so the first trace
        does not wait for torch; ``status().worker`` is ``starting`` until it is ready."""
        self._worker_state = "starting"
        if wait:
            self._warm()
        else:
            threading.Thread(target=self._warm, name="fxscope-warm", daemon=True).start()

    def _warm(self) -> None:
        engine = self._engine
        try:
            engine.pool.ensure_started(timeout=120)
        except Exception as exc:  # noqa: BLE001 - reported by status(); the next job retries
            self._worker_state = f"failed: {exc}"
            self._warn(f"the worker did not start: {exc}")
            return
        if engine is self._engine:
            self._worker_state = "ready"

    def update_settings(self, settings: SessionSettings) -> None:
        """Apply new front-end settings (a changed worker count, timeout or cache directory
        rebuilds the engine, keeping the warm pool when it fits)."""
        with self._lock:
            old, self.settings = self.settings, settings
            rebuild = (old.workers, old.timeout, old.cache_dir) != (settings.workers, settings.timeout,
                                                                    settings.cache_dir)
            if rebuild:
                self._engine = self._new_engine(self._base_config, self._engine)
            if rebuild or (settings.enabled and not old.enabled) or settings.use_cache != old.use_cache:
                self._pending_all = True
                self._requested_all()
                self._schedule(0.0)

    def close(self, path: Path | None = None) -> None:
        """``close(path)``: the editor closed that document (its disk text counts again).
        ``close()``: shut the workspace down, killing every child; no process is left."""
        if path is not None:
            self._close_document(path)
            return
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            self._pending.clear()
            self._pending_all = False
            engine = self._engine
        engine.close()  # kills running children; their rounds end with cancelled jobs
        with self._lock:
            self._idle.wait_for(lambda: self._rounds == 0, timeout=10)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the workspace is closed")

    # -- documents -------------------------------------------------------------------------------
    def _key(self, path: Path) -> str:
        return str(Path(path).absolute() if not Path(path).is_absolute() else Path(path))

    def _rel(self, path: Path | str) -> str:
        return relpath(self._engine.config, Path(path))

    def _bump(self) -> None:
        """A new snapshot of the open documents (lock held)."""
        self._generation += 1
        self._snapshot = Snapshot.of({k: t for k, (_, t) in self._docs.items()},
                                     {k: v for k, (v, _) in self._docs.items()}, generation=self._generation)

    def open(self, path: Path, version: int, text: str) -> None:
        """An editor opened ``path`` at ``version`` with ``text`` (re-traced only when the text
        differs from the disk)."""
        key = self._key(path)
        with self._lock:
            self._check_open()
            self._docs[key] = (version, text)
            self._bump()
            if self.settings.trace_on == "type" and _disk_text(key) != text:
                self._changed(self._rel(key))

    def change(self, path: Path, version: int, text: str) -> None:
        """The buffer of ``path`` is now ``text`` at ``version``: debounced re-trace of the targets
        that depend on it (their running jobs for older snapshots are killed)."""
        key = self._key(path)
        with self._lock:
            self._check_open()
            old = self._docs.get(key)
            self._docs[key] = (version, text)
            self._bump()
            if self.settings.trace_on == "type" and (old is None or old[1] != text):
                self._changed(self._rel(key))

    def save(self, path: Path, text: str | None = None) -> None:
        """``path`` was saved (with ``text`` when the client sends it)."""
        key = self._key(path)
        with self._lock:
            self._check_open()
            if key in self._docs and text is not None and self._docs[key][1] != text:
                self._docs[key] = (self._docs[key][0], text)
                self._bump()
            if self.settings.trace_on == "save":
                self._changed(self._rel(key))

    def _close_document(self, path: Path) -> None:
        key = self._key(path)
        with self._lock:
            doc = self._docs.pop(key, None)
            if doc is None or self._closed:
                return
            self._bump()
            if _disk_text(key) != doc[1]:
                self._changed(self._rel(key))

    def files_changed(self, paths: Iterable[Path]) -> None:
        """Files changed on disk (watchdog, ``workspace/didChangeWatchedFiles``): open buffers
        win; ``pyproject.toml`` reloads the config; others re-run the targets that depend on them."""
        with self._lock:
            self._check_open()
            for path in paths:
                ab = Path(path) if Path(path).is_absolute() else self.root / path
                if ab == self.root / "pyproject.toml":
                    self.reload_config()
                    continue
                if ab.suffix not in (".py", ".md"):
                    continue
                rel = self._rel(ab)
                if rel.startswith(("/", "../")):
                    continue
                self._engine.hasher.invalidate(rel)
                if self._files is not None:
                    config = self._engine.config
                    if ab.is_file() and (is_included(config, rel) or is_example(config, rel)):
                        self._files.add(rel)
                    else:
                        self._files.discard(rel)
                if self._key(ab) in self._docs and self.settings.trace_on == "type":
                    continue  # the open buffer is what counts
                self._changed(rel)

    def reload_config(self) -> str | None:
        """Re-read ``pyproject.toml`` when it changed; the error when it is now invalid (the
        previous configuration stays in use). A changed configuration re-checks every target;
        the warm worker pool is kept when ``preload`` and the worker count are unchanged."""
        with self._lock:
            sig = _signature(self.root / "pyproject.toml")
            if sig == self._config_sig:
                return self._config_error
            try:
                config = load_config(self.root)
            except ConfigError as exc:
                self._config_error = str(exc)
                self._warn(self._config_error)
                return self._config_error
            self._config_sig, self._config_error = sig, None
            if config == self._base_config:
                return None
            self._base_config = config
            self._engine = self._new_engine(config, self._engine)
            self._files = None  # include/exclude or python-path may have changed
            self._pending_all = True
            self._requested_all()
            self._schedule(0.0)
            return None

    def snapshot(self) -> Snapshot:
        """The current immutable snapshot: open buffer texts, versions, generation."""
        with self._lock:
            return self._snapshot

    # -- scheduler -------------------------------------------------------------------------------
    def _requested_all(self) -> None:
        for t in self._discovery.targets if self._discovery else ():
            self._requested[t.id] = self._generation

    def _affected(self, rel: str, discovery: Discovery | None) -> set[str]:
        """Ids of the targets an edit of ``rel`` can change: the static import graph, and the
        files each stored result recorded."""
        out = {tid for tid, st in self._results.items() if rel in st.deps}
        if discovery is not None:
            files = discovery.dependents(rel)
            out.update(t.id for t in discovery.targets if t.file in files)
        return out

    def _changed(self, rel: str) -> None:
        """Mark what depends on ``rel`` stale now (killing running jobs) and schedule the re-run:
        at once for an edit after a quiet period (leading edge: an isolated edit pays no
        debounce), after the debounce for an edit inside a burst (the burst's edits coalesce on
        the trailing edge; each kills the job the previous one started)."""
        self._pending.add(rel)
        for tid in self._affected(rel, self._discovery):
            self._requested[tid] = self._generation
        now = self.clock.now()
        quiet = self._last_edit is None or now - self._last_edit >= self.settings.debounce_s
        self._last_edit = now
        self._schedule(0.0 if quiet and self._timer is None else self.settings.debounce_s)

    def _schedule(self, delay: float) -> None:
        if self._closed or not self.settings.enabled:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.clock.call_later(delay, self._flush)

    def _discover(self, snapshot: Snapshot) -> Discovery:
        config = self._engine.config
        if self._files is None:
            self._files = {relpath(config, p) for p in workspace_files(config, examples=True)}
        files = [self.root / rel for rel in sorted(self._files)]
        overlays = {Path(k): v for k, v in snapshot.texts.items()}
        return discover(config, files=files, overlays=overlays or None)

    def _flush(self) -> None:
        """The debounce expired: re-discover (only changed files are parsed again) and start a
        round for every target that must reflect a newer snapshot."""
        with self._lock:
            self._timer = None
            if self._closed or not self.settings.enabled:
                return
            snapshot = self._snapshot
            old = self._discovery
            discovery = self._discover(snapshot)
            self._set_discovery(discovery)
            pending, self._pending = self._pending, set()
            everything, self._pending_all = self._pending_all, False
            wanted: set[str] = set()
            for rel in pending:
                wanted |= self._affected(rel, discovery)
            known = {t.id for t in discovery.targets}
            if everything:
                wanted |= known
            if old is not None:  # new targets (a class added), new ways to build one (a README
                # example), and targets whose job was killed
                before = {t.id: t.build_key() for t in old.targets}
                wanted |= {t.id for t in discovery.targets if before.get(t.id) != t.build_key()}
            wanted |= {tid for tid, g in self._requested.items()
                       if tid in known and tid not in self._running and g > self._stored_gen(tid)}
            self._forget(set(self._results) - known)
            targets = [t for t in discovery.targets if t.id in wanted]
            for t in targets:
                self._requested[t.id] = snapshot.generation
                self._running[t.id] = snapshot.generation
            if not targets:
                self._idle.notify_all()
                return
            self._rounds += 1
            if self._round_started is None:
                self._round_started = time.perf_counter()
                self._round_total = self._round_done = 0
            self._round_total += len(targets)
            engine, use_cache = self._engine, self.settings.use_cache
            progress = ProgressEvent(self._round_done, self._round_total, len(self._running), None,
                                     snapshot.generation)
        self._on_progress(progress)
        threading.Thread(target=self._round, args=(engine, targets, snapshot, discovery, use_cache),
                         name="fxscope-round", daemon=True).start()

    def _stored_gen(self, tid: str) -> int:
        st = self._results.get(tid)
        return st.generation if st is not None else -1

    def _round(self, engine: Engine, targets: list[Target], snapshot: Snapshot, discovery: Discovery,
               use_cache: bool, retry_faults: bool = False) -> None:
        gen = snapshot.generation

        def stale(t: Target) -> bool:
            return self._closed or gen < self._cancel_below or self._requested.get(t.id, gen) > gen

        def finished(t: Target) -> None:
            with self._lock:
                if self._running.get(t.id) == gen:
                    del self._running[t.id]
                self._round_done += 1
                ev = ProgressEvent(self._round_done, self._round_total, len(self._running), t.id, gen)
            self._on_progress(ev)

        def on_result(r: TargetResult) -> None:
            self.deliver(r, snapshot, discovery)
            finished(r.target)

        try:
            with self._lock:
                self._checks += 1
            engine.run(targets, overlays=snapshot, discovery=discovery, on_result=on_result,
                       cancel=stale, use_cache=use_cache, on_cancelled=finished, retry_faults=retry_faults)
        except Exception as exc:  # noqa: BLE001 - a broken round must not kill the session
            if not self._closed:
                self._round_error = exc
                self._warn(str(exc) if isinstance(exc, CheckError) else
                           f"checking failed: {type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                for t in targets:
                    if self._running.get(t.id) == gen:
                        del self._running[t.id]
                self._rounds -= 1
                if self._rounds == 0:
                    if self._round_started is not None:
                        self._last_duration_ms = (time.perf_counter() - self._round_started) * 1000
                    self._round_started = None
                    # a target killed for a newer snapshot whose own round has not started yet
                    if not self._closed and self._timer is None and any(
                            g > self._stored_gen(tid) and g >= self._cancel_below
                            for tid, g in self._requested.items()
                            if self._discovery and tid in {t.id for t in self._discovery.targets}
                            and tid not in self._running and self._pending_stale(tid)):
                        self._schedule(0.0)
                self._idle.notify_all()

    def _pending_stale(self, tid: str) -> bool:
        """A target whose stored result is older than the snapshot it was last requested for
        because its job was cancelled (not merely unaffected by later edits)."""
        st = self._results.get(tid)
        return st is None or self._requested.get(tid, -1) > st.generation

    # -- store -----------------------------------------------------------------------------------
    def _set_discovery(self, discovery: Discovery) -> None:
        """Make ``discovery`` (of the current snapshot) the workspace's (lock held). Its parse
        errors (FXS402) are findings of their files as much as traced results are: the files whose
        errors changed are announced to ``on_results`` like a delivered result's, and the memo of
        ``findings_for`` is invalidated. No trace may run after such an edit (a class file that no
        longer parses has no target left), so nothing else would announce them."""
        old = self._discovery
        self._discovery = discovery
        self._known = frozenset(t.id for t in discovery.targets)

        def errors(d: Discovery | None) -> dict[str, list[tuple[int, int, str]]]:
            out: dict[str, list[tuple[int, int, str]]] = {}
            for e in d.file_errors if d is not None else ():
                out.setdefault(e.file, []).append((e.line, e.column, e.message))
            return out

        before, after = errors(old), errors(discovery)
        changed = {rel for rel in set(before) | set(after) if before.get(rel) != after.get(rel)}
        if not changed:
            return
        self._store_version += 1
        ev = ResultsEvent(tuple(sorted(Path(rel) if rel.startswith("/") else self.root / rel for rel in changed)),
                          self._generation)
        threading.Thread(target=self._on_results, args=(ev,), daemon=True).start()

    def deliver(self, result: TargetResult, snapshot: Snapshot, discovery: Discovery | None = None) -> bool:
        """Store ``result``, computed for ``snapshot``, unless a result of a newer snapshot is
        already stored (then False: nothing older ever replaces something newer); tells
        ``on_results`` which files' findings changed. The scheduler delivers every result here."""
        tid = result.target.id
        root = str(self.root)
        findings = target_findings(result, root)
        with self._lock:
            old = self._results.get(tid)
            if old is not None and old.generation > snapshot.generation:
                return False  # computed for an older snapshot: never replaces a newer result
            if self._known is not None and tid not in self._known and discovery is not self._discovery:
                return False  # its target is gone since (e.g. its file no longer parses): no result
            deps = _deps_of(result, discovery)
            versions = {rel: snapshot.versions.get(str(self.root / rel)) for rel in deps}
            self._results[tid] = _Stored(result, snapshot.generation, findings, deps, versions)
            changed = self._index_findings(tid, old.findings if old else [], findings)
            self._unindexed.add(tid)  # indexed by the next node query: diagnostics do not wait
            self._store_version += 1
            generation = self._generation
        if changed:
            self._on_results(ResultsEvent(tuple(sorted(self.root / rel for rel in changed)), generation, (tid,)))
        return True

    def _primary_file(self, finding: dict[str, Any]) -> str:
        return primary_location(finding, self.root).file

    def _index_findings(self, tid: str, old: list[dict[str, Any]], new: list[dict[str, Any]]) -> set[str]:
        """Re-index ``tid``'s findings by primary file; returns the files whose findings changed."""
        before: dict[str, list[dict[str, Any]]] = {}
        for f in old:
            before.setdefault(self._primary_file(f), []).append(f)
        after: dict[str, list[dict[str, Any]]] = {}
        for f in new:
            after.setdefault(self._primary_file(f), []).append(f)
        changed = set()
        for rel in set(before) | set(after):
            if before.get(rel) != after.get(rel):
                changed.add(rel)
            per = self._by_file.setdefault(rel, {})
            if rel in after:
                per[tid] = after[rel]
            else:
                per.pop(tid, None)
                if not per:
                    del self._by_file[rel]
        return changed

    def _index_pending_nodes(self) -> None:
        """Index the nodes of the results stored since the last node query (lock held)."""
        for tid in self._unindexed:
            st = self._results.get(tid)
            self._index_nodes(tid, st.result if st is not None else None)
        self._unindexed.clear()

    def _index_nodes(self, tid: str, result: TargetResult | None) -> None:
        for rel in self._node_files.pop(tid, ()):
            lines = self._nodes.get(rel, {})
            for line in list(lines):
                kept = [n for n in lines[line] if n.target_id != tid]
                if kept:
                    lines[line] = kept
                else:
                    del lines[line]
            if not lines:
                self._nodes.pop(rel, None)
        if result is None:
            return
        files: set[str] = set()
        for g in result.body.get("graphs") or ():
            for n in g.get("nodes") or ():
                if not n.get("file") or not n.get("line"):
                    continue
                info = NodeInfo.from_json(n, target=tid, graph=str(g.get("module", "")))
                self._nodes.setdefault(info.location.file, {}).setdefault(info.location.line, []).append(info)  # type: ignore[union-attr]
                files.add(info.location.file)  # type: ignore[union-attr]
        if files:
            self._node_files[tid] = files

    def _forget(self, target_ids: set[str]) -> None:
        """Drop the results of targets that no longer exist (a class was deleted); lock held."""
        changed: set[str] = set()
        for tid in target_ids:
            st = self._results.pop(tid, None)
            if st is None:
                continue
            changed |= self._index_findings(tid, st.findings, [])
            self._index_nodes(tid, None)
            self._unindexed.discard(tid)
            self._requested.pop(tid, None)
        if changed:
            self._store_version += 1
            ev = ResultsEvent(tuple(sorted(self.root / rel for rel in changed)), self._generation, tuple(target_ids))
            threading.Thread(target=self._on_results, args=(ev,), daemon=True).start()

    def results(self) -> list[TargetResult]:
        """The latest result of every target (memory only)."""
        with self._lock:
            return [st.result for _, st in sorted(self._results.items())]

    def report(self, paths: Iterable[Path] | None = None, *, target_ids: Iterable[str] | None = None,
               graphs: bool = False, duration_ms: float | None = None) -> dict[str, Any]:
        """The version-1 report of the stored results (of the targets under ``paths``, or with
        ``target_ids``), as ``fxscope check --format json`` prints it (suppressions are the
        caller's to apply)."""
        with self._lock:
            discovery = self._discovery
            results = self.results()
            duration = duration_ms if duration_ms is not None else (self._last_duration_ms or 0.0)
        if target_ids is not None:
            wanted = set(target_ids)
            results = [r for r in results if r.target.id in wanted]
        if paths is not None:
            rels = [self._rel(p) for p in paths]
            results = [r for r in results if any(_under(r.target.file, rel) for rel in rels)]
        errors = list(discovery.file_errors) if discovery else []
        if paths is not None:
            errors = [e for e in errors if any(_under(e.file, rel) for rel in rels)]
        torch_version = next((r.body["torch"] for r in results if r.body.get("torch")),
                             self._engine.torch_version)
        return build_report(str(self.root), torch_version, drop_covered_skips(results),
                            file_errors=errors, graphs=graphs, duration_ms=duration)

    # -- queries (memory only, no torch) ---------------------------------------------------------
    def findings_for(self, path: Path) -> FileFindings:
        """Merged findings of every target for ``path`` (suppressions read from its buffer)."""
        key = self._key(path)
        rel = self._rel(key)
        with self._lock:
            memo_key = (self._store_version, self._generation)
            memo = self._memo.get(rel)
            if memo is not None and memo[0] == memo_key:
                return memo[1]
            raw = [f for fs in self._by_file.get(rel, {}).values() for f in fs]
            covered = self._covered_skips()
            raw = [f for f in raw if f.get("target") not in covered or f["code"] != "FXS405"]
            errors = [file_error_finding(e) for e in (self._discovery.file_errors if self._discovery else ())
                      if e.file == rel]
            version = self._version_for(rel, key)
            texts = dict(self._snapshot.texts)
            generation = self._generation
        raw = merge_findings(sorted(errors + raw, key=_finding_order))
        source = SourceCache(self.root, texts)
        kept = tuple(Finding.from_json(f) for f in raw if not is_suppressed(f, self.root, source))
        digest = hash_json([f.to_json() for f in kept])[:16]
        out = FileFindings(Path(key), kept, version, generation, digest)
        with self._lock:
            self._memo[rel] = (memo_key, out)
        return out

    def _covered_skips(self) -> set[str]:
        """Skipped targets (FXS405) whose class a factory target built (lock held)."""
        results = [st.result for st in self._results.values()]
        return {r.target.id for r in results} - {r.target.id for r in drop_covered_skips(results)
                                                if r.body.get("findings") or r.body.get("status") != "skipped"}

    def _version_for(self, rel: str, key: str) -> int | None:
        """The document version the findings of ``rel`` were computed for (lock held)."""
        newest: _Stored | None = None
        for st in self._results.values():
            if rel in st.deps and (newest is None or st.generation > newest.generation):
                newest = st
        if newest is not None:
            return newest.versions.get(rel)
        doc = self._docs.get(key)
        return doc[0] if doc is not None else None

    def files_with_findings(self) -> list[Path]:
        """Every file that has at least one finding (absolute paths; suppressions not applied)."""
        with self._lock:
            rels = sorted(rel for rel, per in self._by_file.items() if any(per.values()))
        return [Path(rel) if rel.startswith("/") else self.root / rel for rel in rels]

    def nodes_at(self, path: Path, line: int) -> list[NodeInfo]:
        """Graph nodes produced by ``line`` of ``path``, over every target and instance."""
        rel = self._rel(self._key(path))
        with self._lock:
            self._index_pending_nodes()
            return list(self._nodes.get(rel, {}).get(line, ()))

    def classes_in(self, path: Path) -> list[ClassSummary]:
        """A summary per ``nn.Module`` class defined in ``path`` (targets of that file, and classes
        met as modules of traced models), in line order."""
        rel = self._rel(self._key(path))
        with self._lock:
            discovery = self._discovery
            stored = dict(self._results)
            running = set(self._running)
            requested = dict(self._requested)
            file_findings = [f for fs in self._by_file.get(rel, {}).values() for f in fs]
        own = [t for t in (discovery.targets if discovery else ()) if t.file == rel and t.kind == "class"]
        classes: dict[int, tuple[str, str]] = {}  # line -> (qualname, type name)
        for t in own:
            classes[t.line] = (t.qualname or t.id, f"{t.module}.{t.qualname}" if t.module else t.qualname or t.id)
        instances: dict[int, list[tuple[str, str, dict[str, Any]]]] = {}  # line -> (target, path, module)
        for tid, st in stored.items():
            for m in st.result.body.get("modules") or ():
                if m.get("file") == rel and m.get("line"):
                    line = int(m["line"])
                    instances.setdefault(line, []).append((tid, m["path"], m))
                    classes.setdefault(line, (m["type"].rsplit(".", 1)[-1], m["type"]))
        starts = sorted(classes)
        out = []
        for i, line in enumerate(starts):
            qualname, type_name = classes[line]
            end = starts[i + 1] if i + 1 < len(starts) else None
            target = next((t for t in own if t.line == line), None)
            seen = instances.get(line, [])
            targets = ([target.id] if target else []) + sorted({tid for tid, _, _ in seen} - {target.id if target else ""})
            st = stored.get(target.id) if target else None
            reason = None
            nodes = 0
            if target is not None and (target.id in running or (st is None and target.id in requested)):
                status = "pending"
            elif st is not None:
                status = str(st.result.body.get("status", "error"))
                nodes = int(st.result.body.get("nodes", 0))
                if status in ("skipped", "error", "failed"):
                    first = next(iter(st.findings), None)
                    reason = first["message"] if first else None
            elif seen:
                status = "failed" if any(m.get("status") == "failed" for _, _, m in seen) else "traced"
            else:
                status = "not-traced"
            paths = {(tid, p) for tid, p, _ in seen}
            leaves = sorted({m["path"] for tid, st2 in stored.items()
                             for m in st2.result.body.get("modules") or ()
                             if m.get("status") == "leaf" and m.get("path")
                             and (tid, m["path"].rpartition(".")[0]) in paths})
            count = sum(1 for f in file_findings
                        if line <= primary_location(f, self.root).line and (end is None or primary_location(f, self.root).line < end))
            out.append(ClassSummary(rel, line, qualname, type_name, tuple(targets), status, nodes,
                                    tuple(sorted({p for _, p, _ in seen})), tuple(leaves), count, reason))
        return out

    def _graph_state(self, target_id: str) -> tuple[_Stored | None, bool]:
        """The stored result of ``target_id`` (None before its first trace) and whether it is being
        traced now. Raises KeyError for a target the discovery does not know."""
        with self._lock:
            st = self._results.get(target_id)
            known = self._discovery is not None and any(t.id == target_id for t in self._discovery.targets)
            if st is None and not known:
                raise KeyError(target_id)
            return st, target_id in self._running

    def graph(self, target_id: str, module: str | None = None) -> GraphView:
        """The nodes and findings of one target (one module's graph when ``module`` is given).
        Raises KeyError for an unknown target."""
        st, pending = self._graph_state(target_id)
        if st is None:
            return GraphView(target_id, module, "pending", (), ())
        graphs = []
        edges = []
        for g in st.result.body.get("graphs") or ():
            gm = str(g.get("module", ""))
            if module is not None and gm != module:
                continue
            nodes = tuple(NodeInfo.from_json(n, target=target_id, graph=gm) for n in g.get("nodes") or ())
            graphs.append((gm, nodes))
            for n in g.get("nodes") or ():
                edges.extend((gm, src, n["name"]) for src in n.get("inputs") or ())
        status = "pending" if pending else str(st.result.body.get("status", "error"))
        findings = tuple(Finding.from_json(f) for f in st.findings)
        return GraphView(target_id, module, status, tuple(graphs), findings, tuple(edges))

    def graph_document(self, target_id: str, module: str | None = None) -> GraphDocument:
        """The graph document (version 1, docs/graph-format.md) of one target, or of one module
        in it, as the HTML report draws it: graphs, the modules with their status, the target's
        findings. ``status`` is ``pending`` while it is being traced or was never traced. Raises
        KeyError for an unknown target, GraphModuleError for a module it does not have."""
        st, pending = self._graph_state(target_id)
        if st is None:  # nothing known about its modules yet: an empty document of the one asked for
            doc = build_document(target_id, status="pending", graphs=())
            doc["module"] = module
            return doc
        body = st.result.body
        return build_document(target_id, status="pending" if pending else str(body.get("status", "error")),
                              graphs=body.get("graphs") or (), modules=body.get("modules") or (),
                              findings=st.findings, module=module)

    def target_for_class(self, path: Path, line: int) -> str | None:
        """The id of the class target defined at ``line`` of ``path``, or of the class whose body
        holds that line (the nearest class target starting at or above it)."""
        rel = self._rel(self._key(path))
        with self._lock:
            targets = [t for t in (self._discovery.targets if self._discovery else ())
                       if t.file == rel and t.kind == "class"]
        above = [t for t in targets if t.line <= line]
        return max(above, key=lambda t: t.line).id if above else None

    # -- commands --------------------------------------------------------------------------------
    def retrace(self, paths: Iterable[Path] | None = None) -> None:
        """Re-run the targets under ``paths`` (all when None), faults included, ignoring the cache."""
        self._run_now(paths, None, use_cache=False)

    def _run_now(self, paths: Iterable[Path] | None, shard: tuple[int, int] | None, *, use_cache: bool,
                 retry_faults: bool = False) -> list[Target]:
        """Start a round for the targets under ``paths`` (and in ``shard``) now, no debounce."""
        with self._lock:
            self._check_open()
            snapshot = self._snapshot
            discovery = self._discover(snapshot)
            self._set_discovery(discovery)
            self._forget(set(self._results) - {t.id for t in discovery.targets})
            targets = self._engine.select(discovery, [Path(p) for p in paths] if paths is not None else None,
                                          shard=shard)
            self._generation += 1
            self._snapshot = snapshot = Snapshot(self._generation, snapshot.texts, snapshot.versions)
            for t in targets:
                self._requested[t.id] = snapshot.generation
                self._running[t.id] = snapshot.generation
            if not targets:
                return []
            self._rounds += 1
            if self._round_started is None:
                self._round_started = time.perf_counter()
                self._round_total = self._round_done = 0
            self._round_total += len(targets)
            engine = self._engine
        threading.Thread(target=self._round, args=(engine, list(targets), snapshot, discovery, use_cache,
                                                   retry_faults),
                         name="fxscope-round", daemon=True).start()
        return targets

    def check(self, paths: Iterable[Path] | None = None, *, graphs: bool = False,
              shard: tuple[int, int] | None = None, use_cache: bool = True, retry_faults: bool = False,
              timeout: float | None = None) -> dict[str, Any]:
        """Bring the targets under ``paths`` (and in ``shard``) up to date now, the config and the
        file list re-read first, and return their version-1 report, as ``fxscope check`` does; for
        request/response front ends (the socket daemon). Raises ConfigError when
        ``pyproject.toml`` is invalid and CheckError when the check could not complete."""
        error = self.reload_config()
        if error is not None:
            raise ConfigError(error)
        paths = list(paths) if paths is not None else None
        with self._lock:
            self._files = None  # a batch check sees files created since (no watcher is assumed)
            self._round_error = None
        started = time.perf_counter()
        targets = self._run_now(paths, shard, use_cache=use_cache, retry_faults=retry_faults)
        with self._lock:
            round_gen = self._generation  # the generation this check's round computes for
        if not self.wait_idle(timeout):
            raise CheckError(f"the check did not finish within {timeout:g} s")
        with self._lock:
            failed, self._round_error = self._round_error, None
            missing = [t.id for t in targets  # no result, or only an older one (its job was cancelled)
                       if t.id not in self._results or self._results[t.id].generation < round_gen]
        if failed is not None:
            raise failed
        if self._closed or missing:  # stopped under it: never a shorter report
            raise CheckInterrupted(
                f"the check was interrupted before every target had a result ({len(missing)} of "
                f"{len(targets)} missing{': ' + missing[0] if missing else ''}): the daemon or its "
                "workers were stopped")
        return self.report(paths, target_ids=[t.id for t in targets], graphs=graphs,
                           duration_ms=(time.perf_counter() - started) * 1000)

    def cancel(self) -> None:
        """Kill every running job; their targets keep their previous results (a ``check`` in
        progress raises CheckInterrupted). Nothing is re-run until the next change."""
        with self._lock:
            self._generation += 1
            self._cancel_below = self._generation
            self._snapshot = Snapshot(self._generation, self._snapshot.texts, self._snapshot.versions)

    def clear_cache(self) -> None:
        """Empty the result cache (the in-memory results stay until re-traced)."""
        self._engine.cache.clear()

    def status(self) -> WorkspaceStatus:
        """Targets total/done/running, last duration, worker state."""
        with self._lock:
            known = [t.id for t in self._discovery.targets] if self._discovery else []
            done = sum(1 for tid in known if tid in self._results and tid not in self._running)
            queued = sum(1 for tid in known if tid not in self._running and self._pending_stale(tid)
                         and tid in self._requested)
            worker = self._worker_state
            info = None
            try:
                info = self._engine._pool.info if self._engine._pool is not None else None  # noqa: SLF001
            except Exception:  # noqa: BLE001
                info = None
            if isinstance(info, dict) and worker in ("idle", "starting"):
                worker = "ready"
            torch = (info or {}).get("torch_version") if isinstance(info, dict) else None
            return WorkspaceStatus(self.root, len(known), done, len(self._running), queued,
                                   self._generation, self._last_duration_ms, worker, self._config_error,
                                   self._checks, torch or self._engine.torch_version)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is debouncing, queued or running; False on timeout. With a manual
        clock a pending debounce only ends when the clock is advanced."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            while self._timer is not None or self._rounds > 0:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._idle.wait(0.05 if remaining is None else min(remaining, 0.05))
            return True


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


def _disk_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


def _under(file: str, rel: str) -> bool:
    return rel in ("", ".") or file == rel or file.startswith(rel.rstrip("/") + "/")


def _finding_order(f: dict[str, Any]) -> tuple[Any, ...]:
    anchor = f.get("anchor") or {}
    return (f.get("file", ""), f.get("line", 0), f.get("column") or 0, f["code"],
            anchor.get("line", 0), anchor.get("column") or 0, f.get("target", ""))
