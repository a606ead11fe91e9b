"""The folders of one server, each with its :class:`~fxscope.session.Workspace` (multi-root).

A document belongs to the innermost folder that contains it. When the client opened no folder
at all, a file gets the workspace of its project root (the nearest ``pyproject.toml`` or ``.git``),
created on first use; files outside every folder are otherwise left alone (a library file opened
by go-to-definition is never traced).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlparse

from pygls.uris import from_fs_path

from fxscope.session import Workspace

__all__ = ["Folder", "Folders", "uri_to_path", "path_to_uri"]

log = logging.getLogger("fxscope.lsp")


def uri_to_path(uri: str) -> Path | None:
    """The absolute path of a ``file:`` URI, or None for any other scheme or a malformed URI.

    >>> uri_to_path("file:///ws/m%20n.py").as_posix(), uri_to_path("untitled:Untitled-1")
    ('/ws/m n.py', None)
    """
    try:
        parsed = urlparse(uri)
    except (ValueError, TypeError):
        return None
    if parsed.scheme != "file":
        return None
    path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":
        path = f"//{parsed.netloc}{path}"
    if len(path) >= 3 and path[0] == "/" and path[2] == ":":  # file:///C:/x on Windows
        path = path[1:]
    return Path(path) if path else None


def path_to_uri(path: Path) -> str:
    """The ``file:`` URI of an absolute path (the client's own spelling for its documents)."""
    return from_fs_path(str(path)) or Path(path).as_uri()


@dataclass
class Folder:
    """A workspace folder and its Workspace."""

    root: Path
    uri: str
    name: str
    workspace: Workspace


class Folders:
    """The folders of one server; ``factory(root, uri)`` creates (and starts) a folder's Workspace."""

    def __init__(self, factory: Callable[[Path, str], Workspace]) -> None:
        self._factory = factory
        self._folders: dict[Path, Folder] = {}
        self._explicit = False
        self._lock = threading.Lock()

    def add(self, root: Path, name: str | None = None, uri: str | None = None) -> Folder | None:
        """Add (or return) the folder at ``root``; None when its Workspace cannot be created."""
        root = Path(root).resolve()
        with self._lock:
            self._explicit = True
            folder = self._folders.get(root)
            if folder is not None:
                return folder
        uri = uri or path_to_uri(root)
        workspace = self._create(root, uri)
        if workspace is None:
            return None
        folder = Folder(root, uri, name or root.name, workspace)
        with self._lock:
            existing = self._folders.setdefault(root, folder)
        if existing is not folder:
            _close(folder)
        return existing

    def _create(self, root: Path, uri: str) -> Workspace | None:
        try:
            return self._factory(root, uri)
        except Exception:
            log.exception("cannot open the workspace %s", root)
            return None

    def remove(self, root: Path) -> None:
        """Remove the folder at ``root`` and shut its Workspace down."""
        with self._lock:
            folder = self._folders.pop(Path(root).resolve(), None)
        if folder is not None:
            _close(folder)

    def all(self) -> list[Folder]:
        """Every folder, outermost first."""
        with self._lock:
            return sorted(self._folders.values(), key=lambda f: len(f.root.parts))

    def get(self, root: Path) -> Folder | None:
        with self._lock:
            return self._folders.get(Path(root).resolve())

    def for_path(self, path: Path | None, *, create: bool = True) -> Folder | None:
        """The innermost folder containing ``path``; without explicit folders, the project root's
        folder (created when ``create``)."""
        if path is None:
            return None
        best: Folder | None = None
        with self._lock:
            for folder in self._folders.values():
                if path == folder.root or folder.root in path.parents:
                    if best is None or len(folder.root.parts) > len(best.root.parts):
                        best = folder
            explicit = self._explicit
        if best is not None or explicit or not create:
            return best
        root = _project_root(path)
        if root is None:
            return None
        workspace = self._create(root, path_to_uri(root))
        if workspace is None:
            return None
        folder = Folder(root, path_to_uri(root), root.name, workspace)
        with self._lock:
            existing = self._folders.setdefault(root, folder)
        if existing is not folder:
            _close(folder)
        return existing

    def close_all(self) -> None:
        """Shut every Workspace down (kills every trace process)."""
        with self._lock:
            folders, self._folders = list(self._folders.values()), {}
        for folder in folders:
            _close(folder)


def _project_root(path: Path) -> Path | None:
    """The project root of a loose file: the nearest ancestor with pyproject.toml or .git (never a
    site-packages or dist-packages directory)."""
    if any(part in ("site-packages", "dist-packages") for part in path.parts):
        return None
    from fxscope.project.config import find_root

    root = find_root(path)
    if (root / "pyproject.toml").is_file() or (root / ".git").exists():
        return root
    return None


def _close(folder: Folder) -> None:
    try:
        folder.workspace.close()
    except Exception:  # a workspace that fails to close must not stop the others
        log.exception("closing the workspace of %s failed", folder.root)
