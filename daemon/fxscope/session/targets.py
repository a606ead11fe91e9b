"""The workspace's files and the targets discovered in them (AST only) for the current snapshot.

The file list is walked once and then kept up to date from change notifications; each discovery
parses only the files that changed (the project layer caches the rest). Indexes by file answer
"which targets does an edit affect" and "which classes does this file define" without a pass
over every target.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from pathlib import Path

from fxscope.engine.results import TargetResult
from fxscope.model import Snapshot
from fxscope.project.config import Config
from fxscope.project.discovery import Discovery, Target, discover
from fxscope.project.files import is_example, is_included, relpath, workspace_files

__all__ = ["TargetSet"]


class TargetSet:
    """Files and targets of one root (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._files: set[str] | None = None  # root-relative included files; None: walk again
        self._discovery: Discovery | None = None
        self._by_file: dict[str, list[Target]] = {}
        self._ids: frozenset[str] = frozenset()
        self._files_by_id: dict[str, str] = {}
        self._versions: Mapping[str, int | None] = {}  # open document -> the version discovered

    def rescan(self) -> None:
        """Walk the workspace again at the next discovery (configuration changed, a batch check)."""
        with self._lock:
            self._files = None

    def file_changed(self, config: Config, rel: str, path: Path) -> None:
        """``rel`` was created, changed or deleted on disk."""
        with self._lock:
            if self._files is None:
                return
            if path.is_file() and (is_included(config, rel) or is_example(config, rel)):
                self._files.add(rel)
            else:
                self._files.discard(rel)

    def discover(self, config: Config, snapshot: Snapshot) -> tuple[Discovery, Discovery | None]:
        """Discover the targets of ``snapshot`` (its buffers over the disk) and make them current;
        returns the new and the previous discovery."""
        with self._lock:
            if self._files is None:
                self._files = {relpath(config, p) for p in workspace_files(config, examples=True)}
            files = [config.root / rel for rel in sorted(self._files)]
        overlays = {Path(k): v for k, v in snapshot.texts.items()}
        discovery = discover(config, files=files, overlays=overlays or None)
        by_file: dict[str, list[Target]] = {}
        for t in discovery.targets:
            by_file.setdefault(t.file, []).append(t)
        ids = frozenset(t.id for t in discovery.targets)
        files_by_id = {t.id: t.file for t in discovery.targets}
        with self._lock:
            old, self._discovery, self._by_file, self._ids = self._discovery, discovery, by_file, ids
            self._files_by_id = files_by_id
            self._versions = snapshot.versions
        return discovery, old

    def discovered_version(self, key: str) -> int | None:
        """The version of the open document ``key`` (absolute) the current targets' lines are
        for (None: its text on disk)."""
        with self._lock:
            return self._versions.get(key)

    @property
    def current(self) -> Discovery | None:
        """The last discovery (None before the first)."""
        with self._lock:
            return self._discovery

    def ids(self) -> frozenset[str]:
        """The id of every current target."""
        with self._lock:
            return self._ids

    def file_of(self, target_id: str) -> str | None:
        """The root-relative file that defines ``target_id`` (None: unknown, or a factory outside it)."""
        with self._lock:
            return self._files_by_id.get(target_id) or None

    def class_targets(self, rel: str) -> list[Target]:
        """The class targets defined in ``rel``."""
        with self._lock:
            return [t for t in self._by_file.get(rel, ()) if t.kind == "class"]

    def class_target_at(self, rel: str, line: int) -> Target | None:
        """The class target defined at ``line`` of ``rel``, or of the class whose body holds that
        line (the nearest class target starting at or above it)."""
        above = [t for t in self.class_targets(rel) if t.line <= line]
        return max(above, key=lambda t: t.line) if above else None

    def affected(self, rel: str, recorded: Iterable[str] = ()) -> frozenset[str]:
        """Ids of the targets an edit of ``rel`` can change: the static import graph of the
        current discovery, and ``recorded`` (the targets whose results read ``rel``)."""
        with self._lock:
            discovery, by_file = self._discovery, self._by_file
        out = set(recorded)
        if discovery is not None:
            for file in discovery.dependents(rel):
                out.update(t.id for t in by_file.get(file, ()))
        return frozenset(out)

    def deps_of(self, result: TargetResult, discovery: Discovery | None) -> frozenset[str]:
        """The files ``result`` depends on: those its trace read, its own file, and (nothing
        recorded: skipped, a fault) its file's static imports."""
        recorded = result.outcome.files
        files = set(recorded)
        t = result.target
        if t.file:
            files.add(t.file)
            if discovery is not None and not recorded:
                todo = [t.file]
                while todo:
                    for dep in discovery.imports.get(todo.pop(), ()):
                        if dep not in files:
                            files.add(dep)
                            todo.append(dep)
        return frozenset(f for f in files if not f.endswith("/"))
