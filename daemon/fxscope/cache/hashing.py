"""Content hashes of workspace files; unsaved editor buffers (passed per call) win over the disk.

>>> hash_text("x = 1\\n") == hash_bytes(b"x = 1\\n")
True
>>> hash_json({"b": 1, "a": [2]}) == hash_json({"a": [2], "b": 1})
True
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["FileHasher", "hash_bytes", "hash_json", "hash_text"]

# A file modified this recently may change again within the same timestamp tick without its
# (mtime, size, inode) changing, so its hash is not memoised ("racy" files, as git calls them).
# The same rule as fxscope.project.files.RACY_NS, repeated so that the cache imports no other layer.
_RACY_NS = 2_000_000_000


def hash_bytes(data: bytes) -> str:
    """sha256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def hash_text(text: str) -> str:
    """sha256 hex digest of ``text`` encoded as UTF-8 (what a saved editor buffer hashes to)."""
    return hash_bytes(text.encode("utf-8", "surrogatepass"))


def hash_json(obj: Any) -> str:
    """sha256 hex digest of the canonical JSON of ``obj`` (sorted keys, no whitespace)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
    return hash_bytes(text.encode("ascii"))


class FileHasher:
    """Hashes files under ``root`` by content, memoised by ``(st_mtime_ns, st_size, st_ino)``.

    A repeated lookup of an unchanged file costs one ``stat``. Unsaved editor buffers are passed
    per call (``overlays``: root-relative path -> hash of the buffer text, from an immutable
    snapshot) and win over the disk; the hasher itself keeps no buffer state. Thread-safe.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "m.py").write_text("a = 1\\n")
    >>> hasher = FileHasher(root)
    >>> hasher.hash("m.py") == hash_text("a = 1\\n")
    True
    >>> hasher.hash("m.py", {"m.py": hash_text("a = 2\\n")}) == hash_text("a = 2\\n")
    True
    >>> hasher.hash("m.py") == hash_text("a = 1\\n"), hasher.hash("gone.py")
    (True, None)
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._root = str(self.root)
        self._memo: dict[str, tuple[tuple[int, int, int], str]] = {}

    def hash(self, rel: str, overlays: Mapping[str, str] | None = None) -> str | None:
        """Hash of root-relative ``rel``: ``overlays[rel]`` when given (the hash of an unsaved
        buffer), else the file's bytes; None if the file is missing or unreadable."""
        if overlays:
            overlay = overlays.get(rel)
            if overlay is not None:
                return overlay
        with self._lock:
            memo = self._memo.get(rel)
        path = os.path.join(self._root, rel)
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            self.invalidate(rel)
            return None
        if not stat.S_ISREG(st.st_mode):
            self.invalidate(rel)
            return None
        sig = _signature(st)
        if memo is not None and memo[0] == sig:
            return memo[1]
        try:
            with open(path, "rb") as fh:
                data = fh.read()
                after = _signature(os.fstat(fh.fileno()))
        except OSError:
            self.invalidate(rel)
            return None
        digest = hash_bytes(data)
        stable = after == sig and len(data) == st.st_size
        with self._lock:
            if stable and time.time_ns() - st.st_mtime_ns >= _RACY_NS:
                self._memo[rel] = (sig, digest)
            else:
                self._memo.pop(rel, None)
        return digest

    def seed(self, entries: Mapping[str, tuple[int, int, int, str]]) -> None:
        """Trust these recorded ``rel -> (mtime_ns, size, inode, digest)`` signatures (persisted
        by an earlier process): a file whose ``stat`` still matches is not read again."""
        with self._lock:
            for rel, (mtime_ns, size, ino, digest) in entries.items():
                self._memo.setdefault(rel, ((int(mtime_ns), int(size), int(ino)), str(digest)))

    def memo_entries(self) -> dict[str, tuple[int, int, int, str]]:
        """Every trusted signature, as :meth:`seed` takes them (to persist between runs). Files
        modified within the last two seconds are never in it (their stat may not change with
        their content)."""
        with self._lock:
            return {rel: (*sig, digest) for rel, (sig, digest) in self._memo.items()}

    def invalidate(self, rel: str | None = None) -> None:
        """Forget the memoised hash of ``rel`` (of every file if None)."""
        with self._lock:
            if rel is None:
                self._memo.clear()
            else:
                self._memo.pop(rel, None)


def _signature(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)
