"""Notebook locations at the edges: a notebook's code line -> its cell and the line in that cell.

Below the front ends, a location in a Jupyter notebook counts the notebook's code lines (its code
cells one after the other, see :mod:`fxscope.project.notebooks`). What a person or a tool reads
names the cell: ``model.ipynb:cell 3:12:9`` in text, ``"cell": 3, "line": 12`` in JSON, and in
SARIF and GitHub annotations the line and column of that code in the ``.ipynb`` file itself.
:class:`NotebookIndex` reads each notebook once (open editor buffers first, then the disk) and
:func:`cell_report` maps a whole report.

>>> import tempfile
>>> from fxscope.model import Location
>>> from fxscope.project.notebooks import make_notebook
>>> root = Path(tempfile.mkdtemp())
>>> _ = (root / "nb.ipynb").write_text(make_notebook(["# Title", ("code", "a = 1\\nb = 2"), ("code", "c = 3")]))
>>> index = NotebookIndex(root)
>>> index.to_cell(Location("nb.ipynb", 3, 1)).to_json()
{'file': 'nb.ipynb', 'line': 1, 'column': 1, 'cell': 3}
>>> index.to_file(Location("nb.ipynb", 1, 3, cell=3))
(27, 8)
>>> (root / "nb.ipynb").read_text().splitlines()[26][7:12]
'= 3"'
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from fxscope.model import Finding, Location, Report, ReportTarget
from fxscope.model.outcome import Graphs, ModuleInfo
from fxscope.project.notebooks import (
    CellSource,
    Notebook,
    NotebookError,
    is_notebook,
    raw_position,
    raw_positions,
    read_notebook,
)
from fxscope.report.locations import absolute_path

__all__ = ["NotebookIndex", "cell_label", "cell_report"]


def cell_label(loc: Location) -> str:
    """``cell 3:12:9`` (``cell 3:12`` without a column) for a location in a cell, else ``12:9``."""
    position = f"{loc.line}:{loc.column}" if loc.column is not None else f"{loc.line}"
    return f"cell {loc.cell}:{position}" if loc.cell is not None else position


class NotebookIndex:
    """The notebooks of one workspace ``root``, each read once: ``texts`` (absolute path -> text,
    e.g. open editor buffers) win over the disk."""

    def __init__(self, root: Path, texts: Mapping[str, str] | None = None) -> None:
        self.root = root
        self._texts = dict(texts or {})
        self._read: dict[str, tuple[str, Notebook] | None] = {}
        self._raw: dict[str, dict[int, CellSource] | None] = {}

    def _load(self, file: str) -> tuple[str, Notebook] | None:
        if file not in self._read:
            found = None
            path = absolute_path(file, self.root)
            text = self._texts.get(str(path))
            try:
                if text is None:
                    text = path.read_text(encoding="utf-8", errors="replace")
                found = (text, read_notebook(text))
            except (OSError, NotebookError):
                found = None
            self._read[file] = found
        return self._read[file]

    def notebook(self, file: str) -> Notebook | None:
        """The notebook ``file`` (root-relative or absolute), None for any other file or one that
        cannot be read."""
        if not is_notebook(file):
            return None
        found = self._load(file)
        return found[1] if found is not None else None

    def to_cell(self, loc: Location) -> Location:
        """``loc`` with its cell and the lines in that cell, when it is in a notebook (unchanged
        otherwise, or when the notebook no longer has that line)."""
        if loc.cell is not None:
            return loc
        nb = self.notebook(loc.file)
        where = nb.locate(loc.line) if nb is not None else None
        if where is None or nb is None:
            return loc
        cell, line = where
        end_line = loc.end_line
        if end_line is not None:
            end = nb.locate(end_line)
            end_line = end[1] if end is not None and end[0] == cell else None
        return replace(loc, line=line, end_line=end_line,
                       end_column=loc.end_column if end_line is not None or loc.end_line is None else None, cell=cell)

    def to_file(self, loc: Location) -> tuple[int, int] | None:
        """(line, code-point column) in the ``.ipynb`` file of a location in a cell (what SARIF
        viewers and GitHub annotations point at); None when it is not in a cell."""
        if loc.cell is None:
            return None
        found = self._load(loc.file)
        if found is None:
            return None
        if loc.file not in self._raw:
            try:
                self._raw[loc.file] = raw_positions(found[0])
            except NotebookError:
                self._raw[loc.file] = None
        sources = self._raw[loc.file]
        return raw_position(found[0], sources, loc.cell, loc.line, loc.column) if sources is not None else None

    def code_line(self, loc: Location) -> int:
        """The notebook code line of a location in a cell (its ``line`` when it is not in one)."""
        if loc.cell is None:
            return loc.line
        nb = self.notebook(loc.file)
        found = nb.line_of(loc.cell, loc.line) if nb is not None else None
        return found if found is not None else loc.line


def _finding(f: Finding, index: NotebookIndex) -> Finding:
    return replace(f, location=index.to_cell(f.location),
                   anchor=index.to_cell(f.anchor) if f.anchor is not None else None,
                   related=tuple(index.to_cell(r) for r in f.related))


def _module(m: ModuleInfo, index: NotebookIndex) -> ModuleInfo:
    return replace(m, location=index.to_cell(m.location)) if m.location is not None else m


def _graphs(graphs: Graphs, target: str, index: NotebookIndex) -> Graphs:
    out: list[dict[str, Any]] = []
    for graph in graphs.to_json():
        nodes = []
        for node in graph.get("nodes") or ():
            file, line = node.get("file"), node.get("line")
            if isinstance(file, str) and isinstance(line, int) and is_notebook(file):
                loc = index.to_cell(Location(file, line))
                node = {**node, "line": loc.line, "cell": loc.cell} if loc.cell is not None else node
            nodes.append(node)
        out.append({**graph, "nodes": nodes})
    return Graphs(json=out, target=target)


def _target(t: ReportTarget, index: NotebookIndex) -> ReportTarget:
    loc = index.to_cell(Location(t.file, t.line))
    graphs = _graphs(t.graphs, t.id, index) if t.graphs is not None and _any_notebook(t) else t.graphs
    return replace(t, line=loc.line, cell=loc.cell, modules=tuple(_module(m, index) for m in t.modules),
                   graphs=graphs)


def _any_notebook(t: ReportTarget) -> bool:
    return is_notebook(t.file) or any(m.location is not None and is_notebook(m.location.file) for m in t.modules)


def cell_report(report: Report, root: Path, texts: Mapping[str, str] | None = None) -> Report:
    """``report`` with every location in a notebook mapped to its cell (findings, their anchors
    and call chains, targets, modules and graph nodes); the same report when it has none."""
    if not any(is_notebook(t.file) for t in report.targets) and not any(
            is_notebook(loc.file) for f in report.findings for loc in (f.location, f.anchor, *f.related)
            if loc is not None):
        return report
    index = NotebookIndex(root, texts)
    return replace(report, findings=tuple(_finding(f, index) for f in report.findings),
                   targets=tuple(_target(t, index) for t in report.targets))

