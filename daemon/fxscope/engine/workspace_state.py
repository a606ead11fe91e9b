"""What a check of an unchanged workspace reuses from the last run, persisted in the result cache
as ruff's and mypy's caches do: every file's ``(mtime_ns, size, inode)`` with its content hash (an
unchanged file costs one ``stat`` and is never read), the AST summary of every file content (an
unchanged file is never parsed again) and the last discovery (when no file's signature changed,
discovery is one directory walk, one ``stat`` per file and one JSON document).

A file modified within the last two seconds may change again without its signature changing
("racy", as git calls it): its hash is not recorded and the last discovery is not trusted while
such a file exists, so the content is looked at instead.

>>> import tempfile
>>> from fxscope.cache import FileHasher, ResultCache
>>> from fxscope.project import load_config
>>> root = Path(tempfile.mkdtemp())
>>> _ = (root / "m.py").write_text("from torch import nn\\nclass M(nn.Module):\\n    def forward(self, x): return x\\n")
>>> with ResultCache(root / ".fxscope_cache") as cache:
...     state = WorkspaceState(load_config(root), cache, FileHasher(root))
...     [t.id for t in state.discover().targets]
['m.py::M']
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from fxscope import __version__
from fxscope.cache import FileHasher, ResultCache, hash_bytes, hash_json
from fxscope.project.config import Config
from fxscope.project.discovery import Discovery, discover
from fxscope.project._summary import SUMMARY_FORMAT, Summary, file_kind, summary_of_bytes
from fxscope.project.files import is_racy, workspace_rels

__all__ = ["WorkspaceState"]

#: Version of the persisted discovery document (with the summary format and fxscope's version).
DISCOVERY_FORMAT = 2


class WorkspaceState:
    """Persisted file signatures and discovery of one workspace (see the module docstring).

    ``cache`` stores them next to the results; ``hasher`` is the engine's, seeded with the
    recorded signatures on creation and saved back by :meth:`save`.
    """

    def __init__(self, config: Config, cache: ResultCache, hasher: FileHasher) -> None:
        self.config = config
        self.cache = cache
        self.hasher = hasher
        self.scope = str(config.root)
        self._saved = cache.file_stats(self.scope)
        hasher.seed(self._saved)
        self._memory: dict[str, Summary] = {}  # content digest -> summary, for this process
        self._summary_kind = f"summary:{SUMMARY_FORMAT}:{self.scope}"

    # ------------------------------------------------------------------ discovery
    def discover(self) -> Discovery:
        """The workspace's targets, as :func:`~fxscope.project.discovery.discover` finds them
        from the files on disk, reusing whatever did not change since the last call (in any
        process)."""
        rels = workspace_rels(self.config, examples=True)
        signature: list[Any] = []
        racy = False
        now = time.time_ns()
        join, root = os.path.join, self.scope
        for rel in rels:
            try:
                st = os.stat(join(root, rel))
            except OSError:
                racy = True  # vanished while walking: look at the content
                continue
            racy |= is_racy(st.st_mtime_ns, now)
            signature.append((rel, st.st_mtime_ns, st.st_size, st.st_ino))
        key = hash_json([DISCOVERY_FORMAT, SUMMARY_FORMAT, __version__, self.config.fingerprint(),
                         self.scope, signature])
        if not racy:
            stored = self.cache.get_blobs("discovery", [self.scope]).get(self.scope)
            if isinstance(stored, dict) and stored.get("key") == key:
                try:
                    return Discovery.from_json(stored["discovery"])
                except (KeyError, TypeError, ValueError):
                    pass  # unreadable: discover again below, and overwrite it
        discovery = self._discover_files([Path(root, rel) for rel in rels])
        if not racy:
            self.cache.put_blobs("discovery", {self.scope: {"key": key, "discovery": discovery.to_json()}})
        return discovery

    def _discover_files(self, files: list[Path]) -> Discovery:
        """Discovery from the summaries of the files' contents: in memory, else persisted, else
        parsed (and persisted)."""
        digests: dict[str, str] = {}
        root = self.scope.rstrip(os.sep) + os.sep
        for path in files:
            text = str(path)
            rel = text[len(root):].replace(os.sep, "/") if text.startswith(root) else None
            digest = self.hasher.hash(rel) if rel is not None else None
            if digest is not None:
                digests[text] = _kind(text) + digest
        wanted = [d for d in set(digests.values()) if d not in self._memory]
        for digest, data in self.cache.get_blobs(self._summary_kind, wanted).items():
            try:
                self._memory[digest] = Summary.from_json(data)
            except (KeyError, TypeError, ValueError):
                continue
        new: dict[str, Any] = {}

        def source(rel: str, path: Path) -> Summary | None:
            digest = digests.get(str(path))
            if digest is not None and digest in self._memory:
                return self._memory[digest]
            try:
                data = path.read_bytes()
            except OSError:
                return None
            summary = summary_of_bytes(data, kind=file_kind(rel))
            actual = _kind(rel) + hash_bytes(data)  # what was parsed, even if the file changed since its stat
            self._memory[actual] = summary
            new[actual] = summary.to_json()
            return summary

        discovery = discover(self.config, files=files, summary_source=source)
        if new:  # and forget the summaries of contents the workspace no longer has
            self.cache.put_blobs(self._summary_kind, new, keep=set(digests.values()))
        return discovery

    # ------------------------------------------------------------------ file signatures
    def save(self) -> None:
        """Persist the hasher's trusted signatures that changed since the last save."""
        entries = self.hasher.memo_entries()
        changed = {rel: e for rel, e in entries.items() if self._saved.get(rel) != e}
        removed = [rel for rel in self._saved if rel not in entries]
        if changed or removed:
            self.cache.save_file_stats(self.scope, changed, removed)
            self._saved = entries


def _kind(path: str) -> str:
    """The prefix of a summary's key: a Markdown file, a notebook and a Python file of the same
    bytes have different summaries."""
    kind = file_kind(path)
    return "" if kind == "py" else f"{kind}:"
