"""Findings as LSP diagnostics: conversion, push (``textDocument/publishDiagnostics`` with the
document version) and pull (``textDocument/diagnostic`` with ``resultId``, ``workspace/diagnostic``,
``workspace/diagnostic/refresh``).

Rules: results computed for an older document version never replace newer ones; the last
results stay while a re-trace runs (nothing flashes empty), at the lines they are on now (the
session maps them through the edits; a finding on a line edited since is withheld until the
re-trace) and pushed again after each burst of edits that moved them; a pull from a client that
cannot be told to refresh waits (bounded) until the results for the document's current version
are in.

A notebook an editor has open as a notebook (:mod:`fxscope.lsp.notebooks`) gets its diagnostics
per cell document, mapped through the view of the notebook version they were computed for; a
notebook that is not open has no document to show them in and gets none (``fxscope check``
lists them).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.context import ServerContext
from fxscope.lsp.notebooks import NotebookView, disk_view
from fxscope.lsp.positions import PositionEncoder, split_lines
from fxscope.lsp.workspaces import Folder, path_to_uri, uri_to_path
from fxscope.model import Finding, Location
from fxscope.model.codes import CODES, CODES_URL
from fxscope.project.notebooks import is_notebook
from fxscope.session import FileFindings, ResultsEvent

__all__ = ["CODES_URL", "DiagnosticsFeature", "in_folder", "to_diagnostic", "resolve_file", "register"]

log = logging.getLogger("fxscope.lsp")

SOURCE = "fxscope"

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}
_UNNECESSARY = ("FXS301", "FXS302")
#: Module scopes listed one by one in relatedInformation before the rest are summarised.
_MAX_SCOPES = 5
#: Other lines of one library cause listed one by one before the rest are summarised.
MAX_SITES = 5
#: Call-chain steps listed one by one before the rest are summarised.
MAX_CHAIN = 6
#: Longest wait of a pull from a client without refresh support for results of the current version.
PULL_WAIT_S = 15.0
#: Quiet time after an edit before its document's diagnostics are pushed again at their new lines.
MOVED_DELAY_S = 0.05


def _code_url(code: str) -> str:
    """The page that documents a finding code (the fx codes' table, the compile or export analysis)."""
    known = CODES.get(code)
    return known.url if known is not None else CODES_URL


def resolve_file(root: Path, file: str) -> Path:
    """The absolute path of a store location's ``file`` (root-relative posix, or absolute)."""
    p = Path(file)
    return p if p.is_absolute() else root / p


def in_folder(folder: Folder, path: Path) -> bool:
    """Whether ``path`` is a file of ``folder`` (diagnostics are published for those only)."""
    return path == folder.root or folder.root in path.parents


def _short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def _scope_label(path: str, type_name: str) -> str:
    return f"{path or '<root>'}: {_short(type_name)}"


def _location(root: Path, loc: Location, encoder: PositionEncoder, texts: TextSource) -> types.Location:
    uri, lines, local = texts.place(root, loc)
    return types.Location(uri=uri, range=encoder.range(lines, local.line, local.column, local.end_line,
                                                       local.end_column))


class TextSource:
    """Lines of files by path: open buffers first, then the disk (read once per conversion); a
    location in a notebook of ``views`` is in one of its cells."""

    def __init__(self, buffers: dict[Path, str] | None = None, views: dict[Path, NotebookView] | None = None) -> None:
        self._buffers = buffers or {}
        self._views = views or {}
        self._cache: dict[Path, list[str]] = {}

    def place(self, root: Path, loc: Location) -> tuple[str, list[str], Location]:
        """The document ``loc`` is shown in (its uri and lines) and ``loc`` in that document."""
        path = resolve_file(root, loc.file)
        view = self._views.get(path)
        found = view.local(loc) if view is not None else None
        if found is not None:
            cell, local = found
            return cell.uri, list(cell.lines), local
        return path_to_uri(path), self.lines(path), loc

    def lines(self, path: Path) -> list[str]:
        cached = self._cache.get(path)
        if cached is None:
            text = self._buffers.get(path)
            if text is None:
                try:
                    text = path.read_text(encoding="utf-8", errors="replace")
                except OSError:
                    text = ""
            cached = self._cache[path] = split_lines(text)
        return cached


def _chain_steps(finding: Finding) -> list[Location]:
    """The call chain without repeats: a finding merged over targets carries one chain per target,
    mostly the same steps; each step is listed once (the first target's wording)."""
    seen: set[tuple[object, ...]] = set()
    steps = []
    for step in finding.related:
        key = (*step.range_key(), step.message)
        if key not in seen and not step.file.startswith("<"):
            seen.add(key)
            steps.append(step)
    return steps


def _related(finding: Finding, root: Path, here: types.Location, encoder: PositionEncoder,
             texts: TextSource) -> list[types.DiagnosticRelatedInformation]:
    """The library location (when the finding is shown at its anchor), the other lines of this
    file with the same cause, the call chain and the other module scopes: each list capped at a
    handful of rows, the rest summarised in one row (as Pylance does)."""
    related = []
    origin = finding.origin
    if origin is not None:
        related.append(types.DiagnosticRelatedInformation(
            location=_location(root, origin, encoder, texts),
            message=f"the failing code, in {origin.file}:{origin.line}"))
    sites = finding.sites
    for site in sites[:MAX_SITES]:
        related.append(types.DiagnosticRelatedInformation(
            location=_location(root, site.primary, encoder, texts), message="the same cause, also here"))
    if len(sites) > MAX_SITES:
        rest = sites[MAX_SITES:]
        related.append(types.DiagnosticRelatedInformation(
            location=_location(root, rest[0].primary, encoder, texts),
            message=f"and {len(rest)} more lines of this file with the same cause "
                    f"({', '.join(str(s.primary.line) for s in rest[:6])}{', …' if len(rest) > 6 else ''})"))
    steps = _chain_steps(finding)
    for step in steps[:MAX_CHAIN]:
        related.append(types.DiagnosticRelatedInformation(
            location=_location(root, step, encoder, texts), message=step.message or "called from here"))
    if len(steps) > MAX_CHAIN:
        related.append(types.DiagnosticRelatedInformation(
            location=here, message=f"and {len(steps) - MAX_CHAIN} more call-chain steps"))
    scopes = [s for f in (finding, *finding.sites) for s in f.scopes]
    for scope in scopes[1:_MAX_SCOPES + 1]:
        where = f" (target {scope.target})" if scope.target and scope.target != finding.target else ""
        related.append(types.DiagnosticRelatedInformation(
            location=here, message=f"also in {_scope_label(scope.path, scope.type)}{where}"))
    rest_scopes = scopes[_MAX_SCOPES + 1:]
    if rest_scopes:
        related.append(types.DiagnosticRelatedInformation(
            location=here, message=f"also in {len(rest_scopes)} more module instances "
                                   f"({', '.join(s.path or '<root>' for s in rest_scopes[:3])}, …)"))
    return related


def to_diagnostic(finding: Finding, path: Path, root: Path, encoder: PositionEncoder,
                  texts: TextSource) -> types.Diagnostic:
    """The diagnostic of ``finding`` in ``path``, at its primary location (its anchor when the
    failing code is in an installed library), with the library location, the call chain and the
    other module scopes as related information."""
    uri, lines, shown = texts.place(root, finding.primary)
    rng = encoder.range(lines, shown.line, shown.column, shown.end_line, shown.end_column)
    related = _related(finding, root, types.Location(uri=uri, range=rng), encoder, texts)
    message = finding.message
    scopes = [s for f in (finding, *finding.sites) for s in f.scopes]
    if scopes:
        message += f"\nin {_scope_label(scopes[0].path, scopes[0].type)}"
        if len(scopes) > 1:
            message += f" and {len(scopes) - 1} more"
    if finding.sites:
        n = len(finding.sites)
        message += f"\nthe same cause on {n} more line{'s' if n != 1 else ''} of this file"
    if finding.hint:
        message += f"\nhint: {finding.hint}"
    return types.Diagnostic(
        range=rng,
        message=message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
        code=finding.code,
        code_description=types.CodeDescription(href=_code_url(finding.code)),
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code in _UNNECESSARY else None,
        related_information=related or None,
        data={"target": finding.target, "code": finding.code, "uri": uri},
    )


@dataclass
class _Published:
    version: int | None
    result_id: str


class DiagnosticsFeature:
    """Push and pull diagnostics for every folder of one server."""

    def __init__(self, ctx: ServerContext) -> None:
        self.ctx = ctx
        self._published: dict[str, _Published] = {}  # what each document's client shows
        self._cells_shown: dict[Path, set[str]] = {}  # open notebook -> its cells that show diagnostics
        self._changed: asyncio.Event | None = None
        self._refresh_pending = False
        self._moved: dict[Path, Folder] = {}  # edited documents whose diagnostics are pushed again

    # ------------------------------------------------------------------ capabilities
    @property
    def pull(self) -> bool:
        """The client pulls (``textDocument.diagnostic``); otherwise the server pushes."""
        caps = self.ctx.capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic is not None)

    @property
    def refresh_support(self) -> bool:
        caps = self.ctx.capabilities
        ws = caps.workspace if caps else None
        return bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)

    # ------------------------------------------------------------------ conversion
    def diagnostics_for(self, folder: Folder, path: Path, findings: Sequence[Finding],
                        view: NotebookView | None = None) -> list[types.Diagnostic]:
        texts = TextSource(self.ctx.documents.buffers(), {path: view} if view is not None else None)
        out = []
        for f in findings:
            try:
                out.append(to_diagnostic(f, path, folder.root, self.ctx.encoder, texts))
            except Exception:  # one odd finding must not hide the others
                log.exception("could not convert a %s finding in %s", f.code, path)
        return out

    def cell_diagnostics(self, folder: Folder, path: Path,
                         ff: FileFindings) -> dict[str, list[types.Diagnostic]] | None:
        """The diagnostics of an open notebook's findings by cell document, mapped through the view
        of the version they were computed for (None when that version is no longer known)."""
        current = self.ctx.notebooks.view(path)
        if current is None:
            return None
        if ff.buffer_version is not None:  # mapped to the code lines of that version (the current one)
            view = self.ctx.notebooks.view(path, ff.buffer_version)
        elif ff.version is not None:
            view = self.ctx.notebooks.view(path, ff.version)
        else:
            view = disk_view(path, current)
        if view is None:
            return None
        by_cell: dict[str, list[types.Diagnostic]] = {c.uri: [] for c in current.cells}
        for diagnostic in self.diagnostics_for(folder, path, ff.findings, view):
            if view.cell(self._uri_of(diagnostic)) is not None:
                by_cell.setdefault(self._uri_of(diagnostic), []).append(diagnostic)
        return by_cell

    @staticmethod
    def _uri_of(diagnostic: types.Diagnostic) -> str:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        return str(data.get("uri", ""))

    def _findings(self, folder: Folder, path: Path) -> FileFindings | None:
        if not self.ctx.options_for(folder).enable:
            return None
        return folder.workspace.findings_for(path)

    # ------------------------------------------------------------------ events (on the loop)
    def wake(self) -> None:
        """Something changed: a waiting pull looks again."""
        if self._changed is not None:
            self._changed.set()

    def results_changed(self, folder: Folder, event: ResultsEvent) -> None:
        """New findings for files of ``folder``: push those the event carries, or ask pull
        clients to refresh."""
        self.wake()
        if self.pull:
            self._schedule_refresh()
            return
        enabled = self.ctx.options_for(folder).enable
        for path, found in zip(event.files, event.findings):
            self.publish(folder, path, found if enabled else None)

    def publish_all(self, folder: Folder) -> None:
        """Push every file of ``folder`` that has findings, and every open document."""
        if self.pull:
            self._schedule_refresh()
            return
        paths = set(folder.workspace.files_with_findings())
        paths.update(self.ctx.documents.open_paths(folder))
        for uri, state in list(self._published.items()):
            p = uri_to_path(uri)
            if p is not None and state.result_id and self.ctx.folders.for_path(p, create=False) is folder:
                paths.add(p)
        for path in sorted(paths):
            self.publish(folder, path)

    def document_changed(self, folder: Folder, path: Path) -> None:
        """The buffer of ``path`` was edited: push its diagnostics again where their lines are now
        (once per burst of edits, and only when that moved or withheld some)."""
        if self.pull or path_to_uri(path) not in self._published:
            return
        first = not self._moved
        self._moved[path] = folder
        if first:
            self.ctx.client.call_later(MOVED_DELAY_S, self._push_moved)

    def _push_moved(self) -> None:
        moved, self._moved = self._moved, {}
        if self.ctx.shut_down:
            return
        for path, folder in moved.items():
            try:
                self.publish(folder, path, moved=True)
            except Exception:  # a closing folder
                log.exception("could not push the moved diagnostics of %s", path)

    def publish(self, folder: Folder, path: Path, found: FileFindings | None = None, *, force: bool = False,
                moved: bool = False) -> None:
        """Push the findings of ``path`` (``found``, else the workspace's) unless they are older
        than what the client has; ``moved``: only when the edits since the last push changed them.
        Never for a file outside the folder (an installed library's failures are shown at the
        user's line)."""
        if not in_folder(folder, path):
            return
        if is_notebook(path):
            if self.ctx.notebooks.is_open(path):
                self._publish_notebook(folder, path, found, force=force)
            return  # a notebook not open as one has no document to show them in
        uri = path_to_uri(path)
        open_version = self.ctx.documents.version(path)
        if found is not None and found.buffer_version is not None and found.buffer_version != open_version:
            found = None  # mapped to a buffer edited since: map them to the one the client has
        ff = found if found is not None else self._findings(folder, path)
        if ff is None:  # disabled: clear
            if uri in self._published:
                self._send(uri, [], open_version)
                self._published.pop(uri, None)
            return
        version = self._version(path, ff, open_version)
        last = self._published.get(uri)
        if open_version is not None and last is not None and last.version is not None:
            if version is None or version < last.version:
                return  # older than what the client shows: keep the last results
        if open_version is not None and version is not None and version > open_version:
            return
        if not force and last is not None and last.result_id == ff.result_id and (moved or last.version == version):
            return
        diagnostics = self.diagnostics_for(folder, path, ff.findings)
        if not diagnostics and last is None and open_version is None:
            return  # nothing was shown for this closed file: nothing to clear
        self._published[uri] = _Published(version, ff.result_id)
        self._send(uri, diagnostics, version)

    def _publish_notebook(self, folder: Folder, path: Path, found: FileFindings | None, *, force: bool) -> None:
        """Push an open notebook's findings to its cells (and clear the cells that have none now)."""
        key = path_to_uri(path)
        if found is not None and found.buffer_version is not None \
                and found.buffer_version != self.ctx.documents.version(path):
            found = None  # mapped to a notebook version edited since: map them to the current one
        ff = found if found is not None else self._findings(folder, path)
        last = self._published.get(key)
        shown = self._cells_shown.get(path, set())
        if ff is None:  # disabled: clear
            for uri in sorted(shown):
                self._send(uri, [], None)
            self._cells_shown.pop(path, None)
            self._published.pop(key, None)
            return
        open_version = self.ctx.documents.version(path)
        if last is not None and last.version is not None and (ff.version is None or ff.version < last.version):
            return  # older than what the client shows
        if open_version is not None and ff.version is not None and ff.version > open_version:
            return
        if not force and last is not None and last.version == ff.version and last.result_id == ff.result_id:
            return
        by_cell = self.cell_diagnostics(folder, path, ff)
        if by_cell is None:
            return
        self._published[key] = _Published(ff.version, ff.result_id)
        for uri in sorted(set(by_cell) | shown):
            if by_cell.get(uri) or uri in shown:
                self._send(uri, by_cell.get(uri, []), None)
        self._cells_shown[path] = {uri for uri, items in by_cell.items() if items}

    def cells_removed(self, path: Path, uris: Sequence[str]) -> None:
        """Cells left an open notebook: what they showed goes with them."""
        shown = self._cells_shown.get(path, set())
        for uri in uris:
            if uri in shown:
                shown.discard(uri)
                if not self.pull:
                    self._send(uri, [], None)

    def notebook_closed(self, path: Path, uris: Sequence[str]) -> None:
        """The notebook was closed: its cells show nothing any more."""
        shown = self._cells_shown.pop(path, set())
        self._published.pop(path_to_uri(path), None)
        if not self.pull:
            for uri in sorted(shown | set(uris)):
                self._send(uri, [], None)

    def _version(self, path: Path, ff: FileFindings, open_version: int | None) -> int | None:
        """The document version ``ff`` is for, as the client is told (None: a closed file): the
        buffer's whose lines they were mapped to."""
        if open_version is None:
            return None
        if ff.buffer_version is not None:
            return ff.buffer_version
        if ff.version is None and self._buffer_is_disk(path):
            return open_version  # computed from the disk, which holds exactly the buffer's text
        return ff.version

    def _buffer_is_disk(self, path: Path) -> bool:
        try:
            return path.read_text(encoding="utf-8") == self.ctx.documents.text(path)
        except (OSError, UnicodeDecodeError):
            return False

    def document_closed(self, folder: Folder, path: Path) -> None:
        """The buffer is gone: its disk results count again."""
        self._published.pop(path_to_uri(path), None)
        if not self.pull:
            self.publish(folder, path, force=True)

    def _send(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self.ctx.client.publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def _schedule_refresh(self) -> None:
        if not self.refresh_support or self._refresh_pending:
            return
        self._refresh_pending = True

        def send() -> None:
            self._refresh_pending = False
            if self.ctx.shut_down:
                return
            try:
                self.ctx.client.refresh_diagnostics()
            except Exception:
                log.exception("workspace/diagnostic/refresh failed")

        self.ctx.client.call_later(0.05, send)

    # ------------------------------------------------------------------ pull
    async def _current(self, folder: Folder, path: Path) -> FileFindings | None:
        """The findings of ``path``; for a client that cannot be told to refresh, first wait
        (bounded) while a trace that may change them is debouncing, queued or running."""
        version = self.ctx.documents.version(path)
        if version is None or self.refresh_support:
            return self._findings(folder, path)
        if self._changed is None:
            self._changed = asyncio.Event()
        deadline = time.monotonic() + PULL_WAIT_S
        while time.monotonic() < deadline and self.ctx.busy(folder, path):
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=0.1)
            except asyncio.TimeoutError:
                pass
            if self.ctx.documents.version(path) != version:
                break  # a newer edit: answer now, the client pulls again for it
        return self._findings(folder, path)

    async def pull_document(self, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        cell = self.ctx.notebooks.cell(params.text_document.uri)
        if cell is not None:
            return await self._pull_cell(params, cell[0].path)
        path = uri_to_path(params.text_document.uri)
        if path is not None and is_notebook(path):
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="notebook")
        folder = self.ctx.folders.for_path(path)
        if path is None or folder is None or not in_folder(folder, path):
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="none")
        ff = await self._current(folder, path)
        if ff is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="disabled")
        if params.previous_result_id == ff.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=ff.result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=self.diagnostics_for(folder, path, ff.findings), result_id=ff.result_id)

    async def _pull_cell(self, params: types.DocumentDiagnosticParams, path: Path) -> types.DocumentDiagnosticReport:
        """The diagnostics of one cell of an open notebook."""
        folder = self.ctx.folders.for_path(path, create=False)
        ff = await self._current(folder, path) if folder is not None else None
        by_cell = self.cell_diagnostics(folder, path, ff) if folder is not None and ff is not None else None
        if ff is None or by_cell is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="disabled" if ff is None else "none")
        result_id = f"{ff.result_id}:{ff.version}"
        if params.previous_result_id == result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
        return types.RelatedFullDocumentDiagnosticReport(items=by_cell.get(params.text_document.uri, []),
                                                         result_id=result_id)

    def _workspace_item(self, folder: Folder, path: Path, previous: dict[str, str]
                        ) -> types.WorkspaceDocumentDiagnosticReport:
        uri = path_to_uri(path)
        ff = self._findings(folder, path)
        version = self.ctx.documents.version(path)
        if ff is None:
            return types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=version, items=[])
        if previous.get(uri) == ff.result_id:
            return types.WorkspaceUnchangedDocumentDiagnosticReport(uri=uri, version=version, result_id=ff.result_id)
        return types.WorkspaceFullDocumentDiagnosticReport(
            uri=uri, version=version, items=self.diagnostics_for(folder, path, ff.findings), result_id=ff.result_id)

    async def pull_workspace(self, params: types.WorkspaceDiagnosticParams) -> types.WorkspaceDiagnosticReport:
        previous = {p.uri: p.value for p in params.previous_result_ids or ()}
        items: list[types.WorkspaceDocumentDiagnosticReport] = []
        seen: set[str] = set()
        for folder in self.ctx.folders.all():
            paths = set(folder.workspace.files_with_findings())
            for uri in previous:
                p = uri_to_path(uri)
                if p is not None and self.ctx.folders.for_path(p, create=False) is folder:
                    paths.add(p)
            paths.update(p for p in self.ctx.notebooks.open_paths()
                         if self.ctx.folders.for_path(p, create=False) is folder)
            for path in sorted(p for p in paths if in_folder(folder, p)):
                if is_notebook(path):
                    items.extend(self._notebook_items(folder, path))
                elif path_to_uri(path) not in seen:
                    seen.add(path_to_uri(path))
                    items.append(self._workspace_item(folder, path, previous))
        return types.WorkspaceDiagnosticReport(items=items)

    def _notebook_items(self, folder: Folder, path: Path) -> list[types.WorkspaceDocumentDiagnosticReport]:
        """An open notebook's diagnostics, one item per cell (none for a notebook not open)."""
        ff = self._findings(folder, path) if self.ctx.notebooks.is_open(path) else None
        by_cell = self.cell_diagnostics(folder, path, ff) if ff is not None else None
        if ff is None or by_cell is None:
            return []
        return [types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=None, items=items,
                                                            result_id=f"{ff.result_id}:{ff.version}")
                for uri, items in by_cell.items()]


def register(ls: LanguageServer, ctx: ServerContext) -> DiagnosticsFeature:
    """Register the pull handlers; results events drive the push side."""
    feature = DiagnosticsFeature(ctx)

    @ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(identifier="fxscope", inter_file_dependencies=True,
                                        workspace_diagnostics=True))
    async def document_diagnostic(params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        return await feature.pull_document(params)

    @ls.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(params: types.WorkspaceDiagnosticParams) -> types.WorkspaceDiagnosticReport:
        return await feature.pull_workspace(params)

    return feature
