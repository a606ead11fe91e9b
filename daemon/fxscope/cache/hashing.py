"""Content hashes of workspace files; unsaved editor buffers win over the disk.

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
from pathlib import Path
from typing import Any

__all__ = ["FileHasher", "hash_bytes", "hash_json", "hash_text"]

# A file modified this recently may change again within the same timestamp tick without its
# (mtime, size, inode) changing, so its hash is not memoised ("racy" files, as git calls them).
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

    A repeated lookup of an unchanged file costs one ``stat``. An overlay (the text of an unsaved
    editor buffer) takes precedence over the file on disk until it is removed. Thread-safe.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> _ = (root / "m.py").write_text("a = 1\\n")
    >>> hasher = FileHasher(root)
    >>> hasher.hash("m.py") == hash_text("a = 1\\n")
    True
    >>> hasher.set_overlay("m.py", "a = 2\\n")
    >>> hasher.hash("m.py") == hash_text("a = 2\\n")
    True
    >>> hasher.set_overlay("m.py", None)
    >>> hasher.hash("m.py") == hash_text("a = 1\\n"), hasher.hash("gone.py")
    (True, None)
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._memo: dict[str, tuple[tuple[int, int, int], str]] = {}
        self._overlays: dict[str, str] = {}

    def hash(self, rel: str) -> str | None:
        """Hash of root-relative ``rel``: its overlay if set, else the file's bytes; None if the
        file is missing or unreadable."""
        with self._lock:
            overlay = self._overlays.get(rel)
            memo = self._memo.get(rel)
        if overlay is not None:
            return overlay
        path = self.root / rel
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

    def set_overlay(self, rel: str, text: str | None) -> None:
        """Make ``text`` (an unsaved buffer) the content of ``rel``; None removes the overlay."""
        with self._lock:
            if text is None:
                self._overlays.pop(rel, None)
            else:
                self._overlays[rel] = hash_text(text)

    def overlays(self) -> dict[str, str]:
        """The current overlays: root-relative path -> hash of the buffer text."""
        with self._lock:
            return dict(self._overlays)

    def invalidate(self, rel: str | None = None) -> None:
        """Forget the memoised hash of ``rel`` (of every file if None); overlays are kept."""
        with self._lock:
            if rel is None:
                self._memo.clear()
            else:
                self._memo.pop(rel, None)


def _signature(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)
