"""Notebook document sync (LSP 3.17): ``notebookDocument/didOpen``, ``didChange``, ``didSave``,
``didClose``, and where a notebook's lines are in its cells.

pygls keeps each open notebook and the text of its Python cells (as cell text documents); this
module hands the session one document per notebook, at the notebook's path: the notebook as
nbformat JSON made of its cells as the editor has them (Markdown and other cells without their
text, so cells keep their numbers), versioned by the notebook's version. Everything below works
on the notebook's code lines (its code cells one after the other); diagnostics, hovers, code
lenses and inlay hints map them to the cell documents the editor shows (``vscode-notebook-cell:``
URIs) through the :class:`NotebookView` of the version their lines are for: the session maps
results of an older version to the current version's code lines (through a line diff of the
code lines), so they follow the edits while newer ones are traced.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.positions import split_lines
from fxscope.lsp.workspaces import Folder, uri_to_path
from fxscope.model import Location
from fxscope.project.notebooks import (Cell, CellIndex, Notebook, NotebookError, is_notebook, make_notebook,
                                       read_notebook)

if TYPE_CHECKING:
    from fxscope.lsp.context import ServerContext
    from fxscope.lsp.folders import FolderFeature

__all__ = ["CellView", "NotebookFeature", "NotebookView", "SYNC_OPTIONS", "disk_view", "register"]

log = logging.getLogger("fxscope.lsp")

#: What the server asks for: Python cells of Jupyter notebooks (every cell listed, so cells keep
#: their numbers; only Python cells' text is synced).
SYNC_OPTIONS = types.NotebookDocumentSyncOptions(
    notebook_selector=[types.NotebookDocumentFilterWithCells(
        cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")],
    save=True,
)

#: Versions of a notebook kept for mapping results computed for them.
KEPT_VERSIONS = 16


@dataclass(frozen=True)
class CellView:
    """A Python cell of one version of a notebook: its document ``uri``, its ``number`` among
    all cells (1-based), the notebook code line of its first line, and its lines (LSP-style)."""

    uri: str
    number: int
    first_line: int
    lines: tuple[str, ...]
    #: Its lines as the notebook's code counts them (no empty last line).
    source: tuple[str, ...]

    @property
    def code_lines(self) -> int:
        """How many notebook code lines it holds."""
        return len(self.source)


@dataclass(frozen=True)
class NotebookView:
    """One version of an open notebook: its path, version, Python cells and the nbformat text the
    session sees."""

    path: Path
    version: int | None
    cells: tuple[CellView, ...]
    text: str

    @cached_property
    def index(self) -> CellIndex:
        """Which of its cells holds each notebook code line."""
        return CellIndex(tuple((c.first_line, c.number, c.code_lines) for c in self.cells if c.code_lines))

    def cell_of(self, line: int) -> CellView | None:
        """The cell holding notebook code ``line``."""
        number = self.index.cell_at(line)
        return self.numbered(number) if number is not None else None

    def numbered(self, number: int) -> CellView | None:
        """The cell with this ``number`` among all cells."""
        return next((c for c in self.cells if c.number == number), None)

    def cell(self, uri: str) -> CellView | None:
        """The cell whose document is ``uri``."""
        key = unquote(uri)
        return next((c for c in self.cells if unquote(c.uri) == key), None)

    def local(self, loc: Location) -> tuple[CellView, Location] | None:
        """The cell of ``loc`` (notebook code lines) and ``loc`` with that cell's lines."""
        where = self.index.locate(loc.line)
        cell = self.numbered(where[0]) if where is not None else None
        if where is None or cell is None:
            return None
        end_line, end_column = loc.end_line, loc.end_column
        if end_line is not None:
            end = self.index.locate(end_line)
            if end is None or end[0] != cell.number:  # past the cell: to the end of its last line
                end_line, end_column = cell.code_lines, None
            else:
                end_line = end[1]
        return cell, replace(loc, line=where[1], end_line=end_line, end_column=end_column)

    def code_line(self, uri: str, line: int) -> int | None:
        """The notebook code line of 1-based ``line`` of cell ``uri`` (None past its code lines)."""
        cell = self.cell(uri)
        return None if cell is None else self.index.line_of(cell.number, line)


def view_of(path: Path, version: int | None, cells: list[tuple[str, str, str]]) -> NotebookView:
    """The view of a notebook made of ``cells`` (document uri, ``code``/``markdown``/``raw``,
    text), in order."""
    made: list[Cell] = [(kind, body) for _, kind, body in cells]
    nb = Notebook.from_cells(made)
    views = tuple(CellView(cells[c.number - 1][0], c.number, c.first_line, tuple(split_lines(cells[c.number - 1][2])),
                           c.lines) for c in nb.cells)
    return NotebookView(path, version, views, make_notebook(made))


def disk_view(path: Path, current: NotebookView) -> NotebookView | None:
    """How results computed from ``path`` on disk map to the cells of ``current``: a disk cell
    maps to the open cell of the same number when their text is the same (None when the file
    cannot be read)."""
    try:
        nb = read_notebook(path.read_bytes())
    except (OSError, NotebookError):
        return None
    by_number = {c.number: c for c in current.cells}
    cells = []
    for disk in nb.cells:
        open_cell = by_number.get(disk.number)
        if open_cell is not None and open_cell.source == disk.lines:
            cells.append(replace(open_cell, first_line=disk.first_line))
    return NotebookView(path, None, tuple(cells), current.text)


class NotebookFeature:
    """The open notebooks of one server and their recent versions (thread-safe)."""

    def __init__(self, ls: LanguageServer) -> None:
        self._ls = ls
        self._lock = threading.Lock()
        self._views: dict[Path, OrderedDict[int | None, NotebookView]] = {}
        self._cells: dict[str, Path] = {}  # unquoted cell uri -> notebook path

    # ------------------------------------------------------------------ queries
    def is_open(self, path: Path) -> bool:
        """Whether ``path`` is a notebook an editor has open as a notebook."""
        with self._lock:
            return path in self._views

    def view(self, path: Path, version: int | None = None) -> NotebookView | None:
        """The current view of the open notebook ``path`` (of ``version`` when given)."""
        with self._lock:
            views = self._views.get(path)
            if not views:
                return None
            if version is None:
                return next(reversed(views.values()))
            return views.get(version)

    def cell(self, uri: str) -> tuple[NotebookView, CellView] | None:
        """The current view of the notebook holding cell document ``uri``, and that cell."""
        with self._lock:
            path = self._cells.get(unquote(uri))
        view = self.view(path) if path is not None else None
        cell = view.cell(uri) if view is not None else None
        return (view, cell) if view is not None and cell is not None else None

    def open_paths(self) -> list[Path]:
        """Every open notebook."""
        with self._lock:
            return list(self._views)

    # ------------------------------------------------------------------ sync
    def _cell_text(self, uri: str) -> str | None:
        doc = self._ls.workspace.text_documents.get(unquote(uri))
        return doc.source if doc is not None else None

    def snapshot(self, notebook: types.NotebookDocument, path: Path) -> NotebookView:
        """The view of ``notebook`` as pygls holds it now, recorded as its latest version."""
        cells: list[tuple[str, str, str]] = []
        for cell in notebook.cells:
            text = self._cell_text(cell.document) if cell.kind == types.NotebookCellKind.Code else None
            kind = "code" if text is not None else "markdown" if cell.kind == types.NotebookCellKind.Markup else "raw"
            cells.append((cell.document, kind, text or ""))
        view = view_of(path, notebook.version, cells)
        with self._lock:
            views = self._views.setdefault(path, OrderedDict())
            views[notebook.version] = view
            views.move_to_end(notebook.version)
            while len(views) > KEPT_VERSIONS:
                views.popitem(last=False)
            for c in notebook.cells:
                self._cells[unquote(c.document)] = path
        return view

    def forget(self, path: Path) -> list[str]:
        """The notebook was closed; the uris of the cells it had."""
        with self._lock:
            views = self._views.pop(path, None)
            uris = [k for k, p in self._cells.items() if p == path]
            for k in uris:
                self._cells.pop(k, None)
        return [c.uri for v in (views or {}).values() for c in v.cells] or uris


def notebook_path(uri: str) -> Path | None:
    """The path of a notebook document (``file:`` URI of an ``.ipynb`` file), else None."""
    path = uri_to_path(uri)
    return path if path is not None and is_notebook(path) else None


def register(ls: LanguageServer, ctx: ServerContext, folders: FolderFeature) -> None:
    """Register the notebook notifications: each hands the notebook's new text to the session of
    its folder (as ``textDocument/did*`` does for a file)."""
    notebooks = ctx.notebooks

    def folder_of(path: Path) -> Folder | None:
        folder = ctx.folders.for_path(path)
        if folder is not None and folder.root not in ctx.started and ctx.initialized:
            folders.start(folder)
        return folder

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenNotebookDocumentParams) -> None:
        path = notebook_path(params.notebook_document.uri)
        folder = folder_of(path) if path is not None else None
        if path is None or folder is None:
            return
        notebook = ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        view = notebooks.snapshot(notebook or params.notebook_document, path)
        folder.workspace.open(path, view.version or 0, view.text)
        if not ctx.diagnostics.pull:
            ctx.diagnostics.publish(folder, path, force=True)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeNotebookDocumentParams) -> None:
        path = notebook_path(params.notebook_document.uri)
        folder = ctx.folders.for_path(path, create=False) if path is not None else None
        notebook = ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri)
        if path is None or folder is None or notebook is None or not notebooks.is_open(path):
            return
        before = notebooks.view(path)
        view = notebooks.snapshot(notebook, path)
        folder.workspace.change(path, view.version or 0, view.text)
        gone = {c.uri for c in before.cells} - {c.uri for c in view.cells} if before is not None else set()
        ctx.diagnostics.cells_removed(path, sorted(gone))
        ctx.diagnostics.document_changed(folder, path)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveNotebookDocumentParams) -> None:
        path = notebook_path(params.notebook_document.uri)
        folder = ctx.folders.for_path(path, create=False) if path is not None else None
        view = notebooks.view(path) if path is not None else None
        if path is not None and folder is not None and view is not None:
            folder.workspace.save(path, view.text)

    @ls.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseNotebookDocumentParams) -> None:
        path = notebook_path(params.notebook_document.uri)
        folder = ctx.folders.for_path(path, create=False) if path is not None else None
        if path is None or folder is None or not notebooks.is_open(path):
            return
        cells = notebooks.forget(path)
        folder.workspace.close(path)
        ctx.diagnostics.notebook_closed(path, cells)
