"""Source files and lines behind findings, shared by the output formats, filters and baseline.

A finding's ``file`` is root-relative (posix) inside the workspace and absolute outside it; then its
``anchor`` is the innermost workspace location on the way there. Every front end shows, suppresses
and fingerprints a finding at its primary location (:attr:`fxscope.model.Finding.primary`): the
anchor when the file is outside.

>>> relative_file("/w/pkg/m.py", Path("/w")), relative_file("/site/lib.py", Path("/w"))
('pkg/m.py', None)
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from fxscope.model import Finding, Location
from fxscope.project.notebooks import NotebookError, is_notebook, read_notebook

__all__ = [
    "SourceCache",
    "absolute_path",
    "display_path",
    "relative_file",
    "is_own_target",
    "sort_key",
    "source_readable",
    "split_source_lines",
]

_NEWLINE = re.compile(r"\r\n|\r|\n")


def relative_file(file: str, root: Path) -> str | None:
    """``file`` relative to ``root`` as a posix path, or None when it lies outside the workspace."""
    if not os.path.isabs(file):
        return PurePosixPath(file.replace("\\", "/")).as_posix()
    path = Path(file)
    for base in (root, root.resolve()):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return None


def absolute_path(file: str, root: Path) -> Path:
    """The file on disk: ``root / file`` for a workspace path, ``file`` itself when absolute."""
    return Path(file) if os.path.isabs(file) else root / file


def _library_dirs() -> tuple[str, ...]:
    import site
    import sysconfig

    dirs = {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    try:
        dirs.update(site.getsitepackages())
    except AttributeError:  # some virtualenv versions
        pass
    return tuple(os.path.realpath(d).rstrip(os.sep) + os.sep for d in dirs if d)


def source_readable(path: Path, root: Path) -> bool:
    """Whether a finding's ``path`` may be read for a snippet: a file under the workspace root, or
    a ``.py`` file of an installed library (site-packages, the standard library). Never any other
    file a result (or an edited cache) names, such as ``/etc/passwd``.

    >>> source_readable(Path("/etc/passwd"), Path("/w"))
    False
    """
    real = os.path.realpath(path)
    base = os.path.realpath(root).rstrip(os.sep) + os.sep
    if real.startswith(base):
        return True
    if not real.endswith(".py"):
        return False
    parts = real.split(os.sep)
    return "site-packages" in parts or "dist-packages" in parts or real.startswith(_library_dirs())


def display_path(file: str, root: Path, cwd: Path | None = None) -> str:
    """How a path is printed: relative to the current directory when under it, else absolute."""
    path = absolute_path(file, root)
    base = cwd if cwd is not None else Path.cwd()
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        pass
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix() if not os.path.isabs(file) else file


def sort_key(finding: Finding) -> tuple[Any, ...]:
    """The one order of findings (reports, the editor's store, every output format): where it is
    shown (workspace files first; file, notebook cell, line, column), its code, where it is
    located (a library line reached from there), then the targets of the file it is shown in before
    the others, then its target and message: merging the same finding of several targets keeps the
    file's own target (its build, scopes and call chain first), else the first target by id.

    >>> from fxscope.model import Location
    >>> found = [Finding("FXS101", "error", "m", Location("/lib/x.py", 9), target="b", anchor=Location("a.py", 3)),
    ...          Finding("FXS103", "error", "m", Location("a.py", 3, 5), target="z.py::Z"),
    ...          Finding("FXS103", "error", "m", Location("a.py", 3, 5), target="a.py::A"),
    ...          Finding("FXS101", "error", "m", Location("/lib/x.py", 9), target="a", anchor=Location("a.py", 3))]
    >>> [(f.code, f.target) for f in sorted(found, key=sort_key)]
    [('FXS101', 'a'), ('FXS101', 'b'), ('FXS103', 'a.py::A'), ('FXS103', 'z.py::Z')]
    """
    shown, loc = finding.primary, finding.location
    return (shown.outside, shown.file, shown.cell or 0, shown.line, shown.column or 0, finding.code,
            loc.file, loc.line, loc.column or 0, not is_own_target(finding.target, shown.file), finding.target,
            finding.message)


def is_own_target(target_id: str, file: str) -> bool:
    """Whether ``target_id`` is a class target defined in ``file`` (``file.py::Class``).

    >>> is_own_target("pkg/vit.py::ViT", "pkg/vit.py"), is_own_target("pkg/mae.py::MAE", "pkg/vit.py")
    (True, False)
    """
    return target_id.rpartition("::")[0] == file


def split_source_lines(text: str) -> list[str]:
    """Lines of ``text`` as Python numbers them (by ``\\n``, ``\\r\\n`` and ``\\r`` only;
    ``str.splitlines`` also splits on ``\\f`` and others), without a trailing empty line."""
    lines = _NEWLINE.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class SourceCache:
    """Reads each source file at most once; missing or unreadable files give None.

    ``texts`` (absolute path -> text, e.g. a snapshot's open editor buffers) win over the disk, so
    suppressions and snippets follow what the user sees. A notebook's lines are its code lines
    (its code cells one after the other, as written).

    >>> SourceCache(Path("/w"), {"/w/m.py": "a\\nb  # fxscope: ignore\\n"}).line("m.py", 2)
    'b  # fxscope: ignore'
    """

    def __init__(self, root: Path, texts: Mapping[str, str] | None = None) -> None:
        self.root = root
        self._texts = dict(texts or {})
        self._files: dict[str, list[str] | None] = {}
        self._cells: dict[str, dict[int, list[str]]] = {}

    def lines(self, file: str) -> list[str] | None:
        """All lines of ``file`` (without line endings), or None when it cannot be read."""
        if file not in self._files:
            path = absolute_path(file, self.root)
            text = self._texts.get(str(path))
            if text is None and not source_readable(path, self.root):
                self._files[file] = None  # a result may name any path: show only source files
                return None
            if text is None:
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    self._files[file] = None
                    return None
            if is_notebook(file):
                try:
                    text = read_notebook(text).text
                except NotebookError:
                    self._files[file] = None
                    return None
            self._files[file] = split_source_lines(text)
        return self._files[file]

    def line(self, file: str, lineno: int) -> str | None:
        """Line ``lineno`` (1-based) of ``file``, or None when it does not exist."""
        lines = self.lines(file)
        if lines is None or not 1 <= lineno <= len(lines):
            return None
        return lines[lineno - 1]

    def line_at(self, loc: Location) -> str | None:
        """The line ``loc`` starts on (in its ``cell`` when it has one)."""
        if loc.cell is None:
            return self.line(loc.file, loc.line)
        if loc.file not in self._cells:
            path = absolute_path(loc.file, self.root)
            text = self._texts.get(str(path))
            try:
                if text is None and source_readable(path, self.root):
                    text = path.read_text(encoding="utf-8", errors="replace")
                nb = read_notebook(text) if text is not None else None
            except (OSError, NotebookError):
                nb = None
            self._cells[loc.file] = {c.number: list(c.lines) for c in nb.cells} if nb is not None else {}
        lines = self._cells[loc.file].get(loc.cell, [])
        return lines[loc.line - 1] if 1 <= loc.line <= len(lines) else None
