"""Rounds: what the scheduler runs. Plans a round on the current snapshot (discovery of the changed
files, the targets a change affects), runs it in the engine, delivers each result to the store and
announces the files whose findings changed, with those findings. The
:class:`~fxscope.session.scheduler.RoundSource` of a :class:`~fxscope.session.Workspace`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from fxscope.engine.dispatch import BACKGROUND, DEPENDENCY, FOCUS
from fxscope.engine.engine import Engine
from fxscope.engine.results import TargetResult, drop_covered_skips
from fxscope.errors import CheckError, WorkerStartError
from fxscope.model import Report, Snapshot
from fxscope.project.discovery import Discovery, Target
from fxscope.project.files import is_under
from fxscope.report.build import build_report
from fxscope.session.data import ResultsEvent
from fxscope.session.documents import DocumentStore
from fxscope.session.engine_host import EngineHost, Events
from fxscope.session.plans import RoundControl, RoundPlan
from fxscope.session.store import ResultStore
from fxscope.session.targets import TargetSet

__all__ = ["Rounds"]


def _outcome(result: TargetResult) -> str:
    """How a result counts in a round's summary."""
    if result.cached:
        return "cached"
    status = result.outcome.status
    if status == "error":
        return "failed"
    return "errors" if status in ("failed", "partial") else "clean"


class Rounds:
    """Plans, runs and delivers the rounds of one workspace."""

    def __init__(self, host: EngineHost, documents: DocumentStore, targets: TargetSet, store: ResultStore,
                 events: Events) -> None:
        self._host = host
        self._documents = documents
        self._targets = targets
        self._store = store
        self._events = events
        self._focus_cache: tuple[tuple[int, int], tuple[frozenset[str], frozenset[str]]] | None = None

    # -- RoundSource -----------------------------------------------------------------------------
    def stored_generation(self, target_id: str) -> int:
        """The generation of the stored result of ``target_id`` (-1: none)."""
        return self._store.stored_generation(target_id)

    def affected(self, file: str) -> frozenset[str]:
        """The targets an edit of ``file`` can change: its static importers and every result
        that read it."""
        return self._targets.affected(file, self._store.dependents(file))

    def tier(self, target_id: str) -> int:
        """0 for a target of an open document, 1 for one in a file an open document imports
        (transitively), 2 for the rest of the workspace (the background)."""
        file = self._targets.file_of(target_id)
        if file is None:
            return BACKGROUND
        focus, deps = self._focus()
        return FOCUS if file in focus else DEPENDENCY if file in deps else BACKGROUND

    def _focus(self) -> tuple[frozenset[str], frozenset[str]]:
        """The open documents (root-relative) and the workspace files they import, transitively
        (computed once per set of open documents and discovery)."""
        discovery = self._targets.current
        key = (self._documents.snapshot().generation, id(discovery))  # asked per job and free worker
        cached = self._focus_cache
        if cached is not None and cached[0] == key:
            return cached[1]
        open_files = frozenset(self._host.rel(p) for p in self._documents.paths())
        deps: set[str] = set()
        if discovery is not None:
            todo = list(open_files)
            while todo:
                for dep in discovery.imports.get(todo.pop(), ()):
                    if dep not in deps and dep not in open_files:
                        deps.add(dep)
                        todo.append(dep)
        value = (open_files, frozenset(deps))
        self._focus_cache = (key, value)
        return value

    def plan(self, files: frozenset[str], everything: bool) -> RoundPlan | None:
        """A round on the current snapshot for the changes to ``files``: the targets they
        affect, every target when ``everything``, targets that did not exist before and classes
        whose recipes changed."""
        engine, use_cache = self._host.engine, self._host.settings.use_cache
        snapshot = self._documents.snapshot()
        discovery, old = self._discover(engine, snapshot)
        known = frozenset(t.id for t in discovery.targets)
        wanted: set[str] = set(known) if everything else set()
        for file in files:
            wanted |= self.affected(file)
        if old is not None:  # new targets (a class added), and new ways to build one (a README example)
            before = {t.id: t.build_key() for t in old.targets}
            wanted |= {t.id for t in discovery.targets if before.get(t.id) != t.build_key()}
        return self._plan(engine, snapshot, discovery, frozenset(wanted & known), use_cache=use_cache)

    def plan_now(self, paths: Iterable[Path] | None, shard: tuple[int, int] | None, *, use_cache: bool,
                 retry_faults: bool = False) -> tuple[RoundPlan, list[Target]]:
        """A round for the targets under ``paths`` (and in ``shard``) on a new snapshot generation,
        which supersedes every running job of theirs."""
        self._host.check_open()
        engine = self._host.engine
        discovery, _ = self._discover(engine, self._documents.snapshot())
        targets = engine.select(discovery, [Path(p) for p in paths] if paths is not None else None, shard=shard)
        snapshot = self._documents.next_generation()
        plan = self._plan(engine, snapshot, discovery, frozenset(t.id for t in targets), use_cache=use_cache,
                          retry_faults=retry_faults)
        return plan, targets

    def _plan(self, engine: Engine, snapshot: Snapshot, discovery: Discovery, wanted: frozenset[str], *,
              use_cache: bool, retry_faults: bool = False) -> RoundPlan:
        by_id = {t.id: t for t in discovery.targets}

        def run(ids: tuple[str, ...], control: RoundControl) -> None:
            self._run(engine, [by_id[i] for i in ids], snapshot, discovery, control, use_cache, retry_faults)

        return RoundPlan(snapshot.generation, frozenset(by_id), wanted, run)

    def _discover(self, engine: Engine, snapshot: Snapshot) -> tuple[Discovery, Discovery | None]:
        """Discover the targets of ``snapshot``; the files whose parse errors (FXS402) changed
        and the targets that are gone are announced like a delivered result's."""
        discovery, old = self._targets.discover(engine.config, snapshot)
        changed = self._store.set_file_errors(discovery.file_errors)
        gone = {tid for tid in self._store.target_ids() if tid not in {t.id for t in discovery.targets}}
        changed |= self._store.forget(gone)
        if changed:  # no trace may follow (a class file that no longer parses has no target left)
            self._announce(changed, tuple(sorted(gone)))
        return discovery, old

    def _run(self, engine: Engine, targets: list[Target], snapshot: Snapshot, discovery: Discovery,
             control: RoundControl, use_cache: bool, retry_faults: bool) -> None:
        def on_result(r: TargetResult) -> None:
            self.deliver(r, snapshot, discovery)
            if r.pending:  # the fx phase answered; the target's analyses phase runs next
                control.answered(r.target.id)
            else:
                control.finished(r.target.id, _outcome(r))

        engine.run(targets, overlays=snapshot, discovery=discovery, on_result=on_result,
                   cancel=lambda t: control.stale(t.id), use_cache=use_cache,
                   on_cancelled=lambda t: control.finished(t.id, "cancelled"), retry_faults=retry_faults,
                   priority=lambda t: control.priority(t.id))

    def failed(self, exc: Exception) -> None:
        """A round ended with ``exc``: say so (the session keeps running)."""
        if isinstance(exc, WorkerStartError):
            self._host.worker_failed(exc)
        elif isinstance(exc, CheckError):
            self._events.error(exc)
        else:
            self._events.warning(f"checking failed: {type(exc).__name__}: {exc}")

    # -- results ---------------------------------------------------------------------------------
    def deliver(self, result: TargetResult, snapshot: Snapshot, discovery: Discovery | None) -> bool:
        """Store ``result`` (computed for ``snapshot``) unless something newer is stored or its
        target is gone since; announce the files whose findings, or the document version those
        are for, changed."""
        tid = result.target.id
        current = self._targets.current
        if current is not None and discovery is not current and tid not in self._targets.ids():
            return False  # its target is gone since (e.g. its file no longer parses): no result
        deps = self._targets.deps_of(result, discovery)
        versions = {rel: snapshot.versions.get(str(self._host.root / rel)) for rel in deps}
        changed = self._store.deliver(result, snapshot.generation, deps, versions)
        if changed is None:
            return False
        self._announce(changed, (tid,))
        return True

    def _announce(self, files: set[str], targets: tuple[str, ...]) -> None:
        """Tell ``on_results`` about ``files``, with their findings."""
        listener = self._events.results
        if listener is None or not files:
            return
        root = self._host.root
        paths = sorted(Path(rel) if rel.startswith("/") else root / rel for rel in files)
        snapshot, view = self._documents.snapshot(), self._documents.view()
        findings = tuple(self._store.findings_for(self._host.rel(p), str(p), snapshot, view) for p in paths)
        listener(ResultsEvent(tuple(paths), snapshot.generation, targets, findings))

    def report(self, paths: Iterable[Path] | None, target_ids: Iterable[str] | None, *, graphs: bool,
               duration_ms: float) -> Report:
        """The version-1 report of the stored results (of the targets under ``paths``, or with
        ``target_ids``)."""
        results = self._store.results()
        discovery = self._targets.current
        errors = list(discovery.file_errors) if discovery else []
        if target_ids is not None:
            wanted = set(target_ids)
            results = [r for r in results if r.target.id in wanted]
        if paths is not None:
            rels = [self._host.rel(p) for p in paths]
            results = [r for r in results if any(is_under(r.target.file, rel) for rel in rels)]
            errors = [e for e in errors if any(is_under(e.file, rel) for rel in rels)]
        engine = self._host.engine
        torch_version = next((r.outcome.torch for r in results if r.outcome.torch), engine.torch_version)
        return build_report(str(self._host.root), torch_version, drop_covered_skips(results),
                            file_errors=errors, graphs=graphs, duration_ms=duration_ms)
