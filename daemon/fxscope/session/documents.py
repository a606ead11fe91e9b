"""The open editor buffers: the only place document versions live.

Every open, change, save or close that alters the text which counts for a file makes a new
immutable :class:`~fxscope.model.Snapshot` (its generation one higher); background work only
ever sees snapshots. Keys are absolute paths (``str``).

>>> docs = DocumentStore()
>>> docs.open("/ws/m.py", 1, "x = 1\\n").files, docs.snapshot().generation
(('/ws/m.py',), 1)
>>> docs.change("/ws/m.py", 2, "x = 1\\n").files, docs.version("/ws/m.py")
((), 2)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from fxscope.model import Snapshot

__all__ = ["DocumentChange", "DocumentStore", "disk_text"]


def disk_text(path: str) -> str | None:
    """The text of ``path`` on disk, None when it cannot be read as UTF-8."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class DocumentChange:
    """What one document operation did: the files whose text that counts changed (the buffer
    against the previous buffer, or against the disk when a buffer opens or closes) and the
    snapshot after it."""

    files: tuple[str, ...]
    snapshot: Snapshot


@dataclass(frozen=True)
class _Document:
    version: int | None
    text: str


class DocumentStore:
    """Versioned buffers of the documents an editor has open (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._docs: dict[str, _Document] = {}
        self._snapshot = Snapshot.of({}, {}, generation=0)

    def snapshot(self) -> Snapshot:
        """The current snapshot: open buffer texts, versions, generation."""
        with self._lock:
            return self._snapshot

    def version(self, path: str) -> int | None:
        """The version of the open document ``path`` (None when it is not open)."""
        with self._lock:
            doc = self._docs.get(path)
        return doc.version if doc is not None else None

    def text(self, path: str) -> str | None:
        """The buffer text of ``path`` (None when it is not open)."""
        with self._lock:
            doc = self._docs.get(path)
        return doc.text if doc is not None else None

    def is_open(self, path: str) -> bool:
        """Whether an editor has ``path`` open."""
        with self._lock:
            return path in self._docs

    def paths(self) -> list[str]:
        """Every open document."""
        with self._lock:
            return list(self._docs)

    def open(self, path: str, version: int, text: str) -> DocumentChange:
        """An editor opened ``path`` at ``version`` with ``text`` (changed when it differs from
        the disk)."""
        with self._lock:
            self._docs[path] = _Document(version, text)
            snapshot = self._bump()
        return DocumentChange((path,) if disk_text(path) != text else (), snapshot)

    def change(self, path: str, version: int, text: str) -> DocumentChange:
        """The buffer of ``path`` is now ``text`` at ``version``."""
        with self._lock:
            old = self._docs.get(path)
            self._docs[path] = _Document(version, text)
            snapshot = self._bump()
        return DocumentChange((path,) if old is None or old.text != text else (), snapshot)

    def save(self, path: str, text: str | None = None) -> DocumentChange:
        """``path`` was saved (with ``text`` when the client sent it)."""
        with self._lock:
            old = self._docs.get(path)
            if old is None or text is None or old.text == text:
                return DocumentChange((), self._snapshot)
            self._docs[path] = _Document(old.version, text)
            return DocumentChange((path,), self._bump())

    def close(self, path: str) -> DocumentChange:
        """The editor closed ``path``: its disk text counts again (changed when they differ)."""
        with self._lock:
            old = self._docs.pop(path, None)
            if old is None:
                return DocumentChange((), self._snapshot)
            snapshot = self._bump()
        return DocumentChange((path,) if disk_text(path) != old.text else (), snapshot)

    def next_generation(self) -> Snapshot:
        """A new snapshot of the same buffers (a round started now, or a cancel, supersedes every
        older one)."""
        with self._lock:
            old = self._snapshot
            self._snapshot = Snapshot(old.generation + 1, old.texts, old.versions)
            return self._snapshot

    def _bump(self) -> Snapshot:
        """A new snapshot of the buffers (lock held)."""
        self._snapshot = Snapshot.of({k: d.text for k, d in self._docs.items()},
                                     {k: d.version for k, d in self._docs.items()},
                                     generation=self._snapshot.generation + 1)
        return self._snapshot
