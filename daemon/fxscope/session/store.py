"""The result store: every target's latest typed outcome, indexed once when it is delivered.

Answers from memory, never importing torch and never starting work: the merged findings of a file
(diagnostics), the nodes of a line (hover), the classes of a file (hover, code lens), a target's
status and graphs (the graph view), every result (the report). Each query costs what the file or
target at hand holds, not what the workspace holds. Thread-safe; it starts no thread and calls
nothing back.

Files are root-relative posix paths inside the workspace (absolute outside it), as in the report.

Given a :class:`~fxscope.session.documents.BufferView`, the queries answer in the coordinates of
the editor's buffers: each result's lines are mapped from the document version it was computed
for, per target, and those on lines edited since are withheld (see :mod:`.linemap`).
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any
from pathlib import Path

from fxscope.cache import hash_json
from fxscope.engine.results import TargetResult, class_type, reached_in
from fxscope.graphview.document import GraphDocument, build_document
from fxscope.model import ClassSummary, Finding, GraphView, Location, NodeInfo, Snapshot
from fxscope.model.outcome import ANALYSIS_FX
from fxscope.project.discovery import FileError, Target
from fxscope.report.build import file_error_finding, merge_findings, target_findings
from fxscope.report.locations import is_own_target, sort_key
from fxscope.report.causes import group_by_cause
from fxscope.report.filters import is_suppressed
from fxscope.report.locations import SourceCache, absolute_path
from fxscope.session.data import FileFindings
from fxscope.session.documents import BufferView
from fxscope.session.index import Instance, ModuleIndex, NodeIndex
from fxscope.session.summaries import class_summary

__all__ = ["ResultStore", "StoredResult"]


@dataclass(frozen=True)
class StoredResult:
    """One target's latest result with what the store derived from it: the ``generation`` of
    the snapshot it was computed for, its report findings (root-relative, target and hints set),
    the files it depends on and the document versions (by file) of that snapshot."""

    result: TargetResult
    generation: int
    findings: tuple[Finding, ...]
    deps: frozenset[str]
    versions: Mapping[str, int | None]


class ResultStore:
    """Latest results of one workspace root (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._results: dict[str, StoredResult] = {}
        self._by_file: dict[str, dict[str, tuple[Finding, ...]]] = {}  # file -> target -> findings shown there
        self._dependents: dict[str, set[str]] = {}  # file -> targets whose result depends on it
        self._file_errors: dict[str, tuple[Finding, ...]] = {}  # file -> FXS402 of the discovery
        self._classes: dict[str, str] = {}  # class target -> its class type
        self._skipped: set[str] = set()  # class targets that were not built
        self._guessed: set[str] = set()  # class targets not built from their defaults
        self._built: Counter[str] = Counter()  # root types built by factory targets
        self._reached: Counter[str] = Counter()  # types whose forward some result traced
        self._nodes = NodeIndex()
        self._modules = ModuleIndex()
        self._version = 0  # bumped on every change of what findings_for answers
        self._memo: dict[str, tuple[tuple[int, int, bool], FileFindings]] = {}

    # -- changes ---------------------------------------------------------------------------------
    def deliver(self, result: TargetResult, generation: int, deps: frozenset[str],
                versions: Mapping[str, int | None]) -> set[str] | None:
        """Store ``result``, computed for the snapshot of ``generation``, unless a result of a
        newer snapshot is already stored (then None: nothing older replaces something newer).
        Returns the files whose findings changed, or the open document version they are for
        (``versions`` names the open documents among ``deps``)."""
        tid = result.target.id
        findings = tuple(target_findings(result, str(self.root)))
        with self._lock:
            old = self._results.get(tid)
            if old is not None and old.generation > generation:
                return None
            stored = StoredResult(result, generation, findings, deps, versions)
            self._results[tid] = stored
            self._index_deps(tid, old.deps if old else frozenset(), deps)
            if old is not None:
                self._unindex_kind(old)
            self._index_kind(stored)
            changed = self._index_findings(tid, old.findings if old else (), findings)
            changed.update(rel for rel, v in versions.items()
                           if v is not None and (old is None or old.versions.get(rel) != v))
            self._nodes.put(tid, result.outcome.graphs)
            self._modules.put(tid, result.outcome.modules)
            self._version += 1
        return changed

    def forget(self, target_ids: Iterable[str]) -> set[str]:
        """Drop the results of targets that no longer exist; the files whose findings changed."""
        changed: set[str] = set()
        with self._lock:
            for tid in target_ids:
                old = self._results.pop(tid, None)
                if old is None:
                    continue
                changed |= self._index_findings(tid, old.findings, ())
                self._index_deps(tid, old.deps, frozenset())
                self._unindex_kind(old)
                self._nodes.drop(tid)
                self._modules.drop(tid)
            if changed:
                self._version += 1
        return changed

    def set_file_errors(self, errors: Sequence[FileError]) -> set[str]:
        """The files that do not parse now (their FXS402 findings); the files whose errors
        changed."""
        by_file: dict[str, list[Finding]] = {}
        for e in errors:
            by_file.setdefault(e.file, []).append(file_error_finding(e))
        new = {file: tuple(fs) for file, fs in by_file.items()}
        with self._lock:
            old = self._file_errors
            changed = {f for f in set(old) | set(new) if old.get(f) != new.get(f)}
            self._file_errors = new
            if changed:
                self._version += 1
        return changed

    def _index_deps(self, tid: str, old: frozenset[str], new: frozenset[str]) -> None:
        for file in old - new:
            targets = self._dependents.get(file)
            if targets is not None:
                targets.discard(tid)
                if not targets:
                    del self._dependents[file]
        for file in new - old:
            self._dependents.setdefault(file, set()).add(tid)

    def _index_kind(self, stored: StoredResult) -> None:
        """Classes, the types factories built and the types some trace reached: a class a factory
        builds is the factory's to report, and the FXS405 of a class reached through another
        target is dropped (see ``engine.results.drop_covered_skips``)."""
        target, outcome = stored.result.target, stored.result.outcome
        kind = class_type(target)
        if kind:
            self._classes[target.id] = kind
            if outcome.status == "skipped":
                self._skipped.add(target.id)
            if not _built_from_defaults(stored.result):
                self._guessed.add(target.id)
        if target.kind == "factory" and outcome.root_type:
            self._built[outcome.root_type] += 1
        self._reached.update(reached_in(stored.result))

    def _unindex_kind(self, stored: StoredResult) -> None:
        target, outcome = stored.result.target, stored.result.outcome
        self._classes.pop(target.id, None)
        self._skipped.discard(target.id)
        self._guessed.discard(target.id)
        if target.kind == "factory" and outcome.root_type:
            self._built[outcome.root_type] -= 1
        self._reached.subtract(reached_in(stored.result))

    def _index_findings(self, tid: str, old: Sequence[Finding], new: Sequence[Finding]) -> set[str]:
        """Re-index ``tid``'s findings by the file they are shown in; the files that changed."""
        before: dict[str, list[Finding]] = {}
        for f in old:
            before.setdefault(f.primary.file, []).append(f)
        after: dict[str, list[Finding]] = {}
        for f in new:
            after.setdefault(f.primary.file, []).append(f)
        changed = set()
        for file in set(before) | set(after):
            if before.get(file) != after.get(file):
                changed.add(file)
            per = self._by_file.setdefault(file, {})
            if file in after:
                per[tid] = tuple(after[file])
            else:
                per.pop(tid, None)
                if not per:
                    del self._by_file[file]
        return changed

    # -- queries ---------------------------------------------------------------------------------
    def get(self, target_id: str) -> StoredResult | None:
        """The stored result of ``target_id``."""
        with self._lock:
            return self._results.get(target_id)

    def stored_generation(self, target_id: str) -> int:
        """The snapshot generation of the stored result of ``target_id``; -1 when there is none."""
        with self._lock:
            stored = self._results.get(target_id)
        return stored.generation if stored is not None else -1

    def target_ids(self) -> set[str]:
        """The id of every stored target."""
        with self._lock:
            return set(self._results)

    def dependents(self, file: str) -> set[str]:
        """The targets whose stored result recorded ``file`` as a dependency."""
        with self._lock:
            return set(self._dependents.get(file, ()))

    def results(self) -> list[TargetResult]:
        """The latest result of every target, by id."""
        with self._lock:
            return [st.result for _, st in sorted(self._results.items())]

    def files_with_findings(self) -> list[str]:
        """Every file with at least one finding (suppressions not applied)."""
        with self._lock:
            files = {file for file, per in self._by_file.items() if any(per.values())}
            files.update(f for f, errors in self._file_errors.items() if errors)
        return sorted(files)

    def findings_for(self, file: str, key: str, snapshot: Snapshot, view: BufferView | None = None) -> FileFindings:
        """The merged findings of every target shown in ``file`` (absolute ``key``), with the
        suppression comments of ``snapshot``'s buffers applied, one per library cause
        (:func:`~fxscope.report.causes.group_by_cause`); with ``view``, in the coordinates of
        its buffers (findings on lines edited since withheld, and no FXS402 for a buffer that
        does not parse: the editor shows that syntax error) and suppressions read from them."""
        tracked = view is not None and view.tracks(key)
        with self._lock:
            memo_key = (self._version, view.generation if view is not None else snapshot.generation, tracked)
            memo = self._memo.get(file)
            if memo is not None and memo[0] == memo_key:
                return memo[1]
            raw = []
            for tid, fs in self._by_file.get(file, {}).items():
                versions = self._results[tid].versions if tid in self._results else {}
                for f in fs:
                    if self._covered(tid, f):
                        continue
                    moved = self._moved(f, versions, view) if view is not None else f
                    if moved is not None:
                        raw.append(moved)
            raw.extend(self._file_errors.get(file, ()))
            version = self._version_for(file, key, snapshot)
        if view is not None and key in view.held:
            raw = [f for f in raw if not (f.code == "FXS402" and f.primary.file == file)]
        source = SourceCache(self.root, view.texts if view is not None else snapshot.texts)
        kept = tuple(group_by_cause(f for f in merge_findings(sorted(raw, key=sort_key))
                                    if not is_suppressed(f, source)))
        digest = hash_json([f.to_json() for f in kept])[:16]
        out = FileFindings(Path(key), kept, version, snapshot.generation, digest,
                           view.versions.get(key) if view is not None and tracked else None)
        with self._lock:
            self._memo[file] = (memo_key, out)
        return out

    def _key(self, file: str) -> str:
        """The document key (absolute path) of a store ``file``."""
        return str(absolute_path(file, self.root))

    def _moved(self, finding: Finding, versions: Mapping[str, int | None], view: BufferView) -> Finding | None:
        """``finding`` (of a result computed for the document ``versions``) where its lines are in
        ``view``'s buffers; None when its primary line was edited since."""
        location = self._moved_location(finding.location, versions, view)
        anchor = self._moved_location(finding.anchor, versions, view) if finding.anchor is not None else None
        primary = anchor if finding.anchor is not None and finding.location.outside else location
        if primary is None:
            return None
        related = tuple(r for r in (self._moved_location(loc, versions, view) for loc in finding.related) if r is not None)
        if location is None:  # shown at its anchor: the raising line is in a library (never edited here)
            location = finding.location
        if (location, anchor, related) == (finding.location, finding.anchor, finding.related):
            return finding
        return replace(finding, location=location, anchor=anchor, related=related)

    def _moved_location(self, loc: Location, versions: Mapping[str, int | None], view: BufferView) -> Location | None:
        key = self._key(loc.file)
        if not view.tracks(key):
            return loc
        lines = view.line_map(key, versions.get(loc.file))
        line = lines.line(loc.line) if lines is not None else None
        if lines is None or line is None:
            return None
        if loc.end_line is None:
            return loc if line == loc.line else replace(loc, line=line)
        end = lines.line(loc.end_line)
        if end is None or end < line:  # its last line was edited: the range ends with its first line
            return replace(loc, line=line, end_line=line, end_column=None)
        return loc if (line, end) == (loc.line, loc.end_line) else replace(loc, line=line, end_line=end)

    def _covered(self, tid: str, finding: Finding) -> bool:
        """Whether another target speaks for ``finding`` of ``tid`` (lock held): a class that
        needs arguments and that a configured factory builds (its automatic build's findings are
        the factory's to report), or the FXS405 of a class some trace reached."""
        kind = self._classes.get(tid)
        if kind is None:
            return False
        if self._built[kind] > 0 and tid in self._guessed:
            return True
        return finding.code == "FXS405" and tid in self._skipped and self._reached[kind] > 0

    def _version_for(self, file: str, key: str, snapshot: Snapshot) -> int | None:
        """The document version the findings of ``file`` were computed for: that of the newest
        result depending on it, else the buffer's (lock held)."""
        newest: StoredResult | None = None
        for tid in self._dependents.get(file, ()):
            st = self._results[tid]
            if newest is None or st.generation > newest.generation:
                newest = st
        if newest is not None:
            return newest.versions.get(file)
        return snapshot.versions.get(key)

    def nodes_at(self, file: str, line: int, view: BufferView | None = None) -> list[NodeInfo]:
        """Graph nodes produced by ``line`` of ``file``, over every target and instance; with
        ``view``, ``line`` is a line of its buffer, and each target's nodes are those of the line
        it was in the version that target was traced for (none for a line inserted or edited since).
        The nodes of the file's own class targets come first (a hover describes them first)."""
        key = self._key(file)
        with self._lock:
            if view is None or not view.tracks(key):
                return _own_first(self._nodes.at(file, line), file)
            by_version: dict[int | None, set[str]] = {}
            for tid in self._dependents.get(file, ()):
                by_version.setdefault(self._results[tid].versions.get(file), set()).add(tid)
            out: list[NodeInfo] = []
            for version, tids in by_version.items():
                lines = view.line_map(key, version)
                old = lines.back(line) if lines is not None else None
                if old is not None:
                    out.extend(n for n in self._nodes.at(file, old) if n.target_id in tids)
            return _own_first(out, file)

    def status(self, target_id: str) -> str | None:
        """The status of the stored result of ``target_id`` (None: never traced)."""
        stored = self.get(target_id)
        return stored.result.outcome.status if stored is not None else None

    def classes_in(self, file: str, own: Sequence[Target], pending: Callable[[str], bool],
                   view: BufferView | None = None) -> list[ClassSummary]:
        """A summary per ``nn.Module`` class defined in ``file``: the class targets ``own``, and
        classes met as modules of traced models, in line order. ``pending(id)``: that target is
        being traced or waits for its first result. With ``view``, results' lines are mapped to its
        buffer (``own``'s lines must already be)."""
        with self._lock:
            instances = self._modules.instances(file)
            shown = [f for fs in self._by_file.get(file, {}).values() for f in fs]
            if view is not None and view.tracks(self._key(file)):
                instances, shown = self._moved_classes(file, instances, view)
            stored = {t.id: self._results.get(t.id) for t in own}
            rooted = {i.target: held.result.outcome.analyses for found in instances.values() for i in found
                      if i.module.path == "" and (held := self._results.get(i.target)) is not None}
            leaves = {(i.target, i.module.path): self._modules.leaf_children(i.target, i.module.path)
                      for found in instances.values() for i in found}
        classes = {t.line: (t.qualname or t.id, f"{t.module}.{t.qualname}" if t.module else t.qualname or t.id)
                   for t in own}
        for line, found in instances.items():
            classes.setdefault(line, (found[0].module.type.rsplit(".", 1)[-1], found[0].module.type))
        starts = sorted(classes)
        lines = sorted(f.primary.line for f in shown)
        out = []
        for i, line in enumerate(starts):
            end = starts[i + 1] if i + 1 < len(starts) else None
            target = next((t for t in own if t.line == line), None)
            seen = instances.get(line, [])
            held = stored.get(target.id) if target else None
            summary = class_summary(file, line, classes[line], target, held.result.outcome if held else None,
                                    held.findings if held else (), seen, pending(target.id) if target else False,
                                    rooted, held.result.pending if held else ())
            kids = sorted({c for inst in seen for c in leaves.get((inst.target, inst.module.path), ())})
            count = sum(1 for n in lines if line <= n and (end is None or n < end))
            out.append(replace(summary, leaf_children=tuple(kids), findings=count))
        return out

    def _moved_classes(self, file: str, instances: dict[int, list[Instance]], view: BufferView
                       ) -> tuple[dict[int, list[Instance]], list[Finding]]:
        """The class instances and findings of ``file`` at their lines in ``view``'s buffer (lock held)."""
        key = self._key(file)
        moved: dict[int, list[Instance]] = {}
        for line, found in instances.items():
            for inst in found:
                stored = self._results.get(inst.target)
                lines = view.line_map(key, stored.versions.get(file) if stored is not None else None)
                now = lines.line(line) if lines is not None else None
                if now is not None:
                    moved.setdefault(now, []).append(inst)
        shown: list[Finding] = []
        for tid, fs in self._by_file.get(file, {}).items():
            versions = self._results[tid].versions if tid in self._results else {}
            shown.extend(m for m in (self._moved(f, versions, view) for f in fs) if m is not None)
        return moved, shown

    def graph(self, target_id: str, module: str | None, pending: bool) -> GraphView:
        """The nodes and findings of one stored target (one module's graph when ``module`` is
        given); ``pending``: it is being traced now."""
        stored = self.get(target_id)
        if stored is None:
            return GraphView(target_id, module, "pending", (), ())
        outcome = stored.result.outcome
        graphs = [g for g in outcome.graphs or () if g.analysis == ANALYSIS_FX and (module is None or g.module == module)]
        edges = tuple((g.module, src, n.name) for g in graphs for n in g.nodes for src in n.inputs)
        status = "pending" if pending else outcome.status
        return GraphView(target_id, module, status, tuple((g.module, g.nodes) for g in graphs),
                         stored.findings, edges)

    def graph_document(self, target_id: str, module: str | None, pending: bool,
                       view: BufferView | None = None) -> GraphDocument:
        """The graph document (version 1, docs/graph-format.md) of one target, or of one module
        in it; raises GraphModuleError for a module it does not have. With ``view``, every line it
        names (nodes, graph ends, modules, findings) is where that line is in ``view``'s buffers
        now, so a click goes where the code is; a line edited since loses its place (no ``line``:
        nothing to go to) and a finding on it is withheld, as in the diagnostics."""
        stored = self.get(target_id)
        if stored is None:  # nothing known about its modules yet: an empty document of the one asked for
            doc = build_document(target_id, status="pending", graphs=())
            doc["module"] = module
            return doc
        outcome = stored.result.outcome
        findings: Sequence[Finding] = stored.findings
        if view is not None:
            with self._lock:
                findings = [m for m in (self._moved(f, stored.versions, view) for f in findings) if m is not None]
        doc = build_document(target_id, status="pending" if pending else outcome.status,
                             graphs=outcome.graphs.to_json() if outcome.graphs is not None else (),
                             modules=[m.to_json() for m in outcome.modules],
                             findings=[f.to_json() for f in findings], module=module)
        if view is not None:
            places = [*(n for g in doc["graphs"] for n in g["nodes"]), *(g["ends"] for g in doc["graphs"] if "ends" in g),
                      *doc["modules"]]
            for place in places:
                self._move_place(place, stored.versions, view)
        return doc

    def _move_place(self, place: dict[str, Any], versions: Mapping[str, int | None], view: BufferView) -> None:
        """A document entry's ``file``/``line`` mapped to ``view``'s buffer (``line`` dropped, and
        its column range with it, when that line was edited since)."""
        file, line = place.get("file"), place.get("line")
        if not isinstance(file, str) or not isinstance(line, int) or not line or "cell" in place:
            return
        key = self._key(file)
        if not view.tracks(key):
            return
        lines = view.line_map(key, versions.get(file))
        now = lines.line(line) if lines is not None else None
        if now is None:
            for name in ("line", "column", "end_line", "end_column"):
                place.pop(name, None)
        elif now != line:
            end = place.get("end_line")
            place["line"] = now
            if isinstance(end, int):
                place["end_line"] = end + now - line


def _own_first(nodes: list[NodeInfo], file: str) -> list[NodeInfo]:
    """``nodes`` with those of ``file``'s own class targets first (stable otherwise)."""
    return sorted(nodes, key=lambda n: not is_own_target(n.target_id, file))


def _built_from_defaults(result: TargetResult) -> bool:
    """Whether fxscope built a class target from its constructor's defaults."""
    build = result.outcome.build
    return not result.target.needs_args and result.outcome.status != "skipped" and (
        build is None or build.kind == "defaults")
