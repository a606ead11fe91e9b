"""Which workspace files a job imported, with the hash of the content actually executed.

The zygote's child calls :func:`record_baseline` before running the job; the runner then calls
``touched_files(root)`` (or passes its own ``before`` snapshot of ``sys.modules`` names).

Example::

    before = set(sys.modules)
    import pkg.model
    touched_files(Path("/ws"), before)   # {"pkg/__init__.py": "9f2c...", "pkg/model.py": "..."}
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Callable, Collection
from pathlib import Path

from .overlay import get_overlay, served_digest

__all__ = ["DEFAULT_EXCLUDED_DIRS", "error_files", "record_baseline", "touched_files"]

DEFAULT_EXCLUDED_DIRS: frozenset[str] = frozenset(
    {
        ".venv", "venv", ".tox", ".nox", ".git", ".hg", "__pycache__", "site-packages",
        "dist-packages", "node_modules", "build", "dist", ".fxscope_cache", ".mypy_cache",
        ".pytest_cache", ".eggs",
    }
)

_baseline: frozenset[str] | None = None


def record_baseline() -> None:
    """Remember ``sys.modules``' names now: the default ``before`` of :func:`touched_files`."""
    global _baseline
    _baseline = frozenset(sys.modules)


def _digest(path: str) -> str | None:
    served = served_digest(path)  # what was executed, even if the file changed since
    if served is not None:
        return served
    text = get_overlay(path)
    if text is not None:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        with open(path, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()
    except OSError:
        return None


def error_files(error: BaseException, root: Path | str, is_user_file: Callable[[str], bool]) -> dict[str, str]:
    """Workspace files an import/build ``error`` went through (its ``filename`` and traceback
    frames), which ``sys.modules`` does not list when their import failed -> path -> sha256."""
    filename = getattr(error, "filename", None)
    paths = [filename] if isinstance(filename, str) else []
    tb = error.__traceback__
    while tb is not None:
        paths.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    out: dict[str, str] = {}
    for path in map(os.path.abspath, paths):
        if is_user_file(path) and os.path.exists(path):
            digest = _digest(path)
            if digest:
                out.setdefault(os.path.relpath(path, root).replace(os.sep, "/"), digest)
    return out


def touched_files(
    root: Path | str,
    before: Collection[str] | None = None,
    exclude: Collection[str] = DEFAULT_EXCLUDED_DIRS,
) -> dict[str, str]:
    """Map root-relative POSIX paths of modules imported since ``before`` to content SHA-256.

    ``before`` is a collection of module names loaded before the job (default: the baseline
    recorded by the worker). Only files under ``root`` and outside ``exclude``d directory names
    count; overlaid files are hashed from their overlay text.
    """
    if before is None:
        before = _baseline if _baseline is not None else frozenset()
    roots = {os.path.abspath(root)}
    roots.add(os.path.realpath(root))
    prefixes = tuple(r.rstrip(os.sep) + os.sep for r in roots)
    out: dict[str, str] = {}
    for name, module in list(sys.modules.items()):
        if name in before or module is None:
            continue
        file = getattr(module, "__file__", None)
        if not isinstance(file, str):
            continue
        path = os.path.abspath(file)
        base = next((p for p in prefixes if path.startswith(p)), None)
        if base is None:
            real = os.path.realpath(path)
            base = next((p for p in prefixes if real.startswith(p)), None)
            if base is None:
                continue
            path = real
        rel = path[len(base):]
        parts = rel.split(os.sep)
        if any(part in exclude for part in parts[:-1]):
            continue
        key = "/".join(parts)
        if key in out:
            continue
        digest = _digest(path)
        if digest is not None:
            out[key] = digest
    return out
