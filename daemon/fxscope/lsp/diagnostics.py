"""Findings as LSP diagnostics: conversion, push (``textDocument/publishDiagnostics`` with the
document version) and pull (``textDocument/diagnostic`` with ``resultId``, ``workspace/diagnostic``,
``workspace/diagnostic/refresh``).

Rules: results computed for an older document version never replace newer ones; the last
results stay while a re-trace runs (nothing flashes empty); a pull from a client that cannot be
told to refresh waits (bounded) until the results for the document's current version are in.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from lsprotocol import types

from fxscope.lsp.folders import Folder, path_to_uri, uri_to_path
from fxscope.lsp.positions import PositionEncoder, split_lines
from fxscope.model.codes import CODES_URL

if TYPE_CHECKING:
    from fxscope.lsp.server import FxscopeServer
    from fxscope.model import Finding, Location

__all__ = ["CODES_URL", "DiagnosticsFeature", "to_diagnostic", "resolve_file", "register"]

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
_MAX_SCOPES = 8
#: Longest wait of a pull from a client without refresh support for results of the current version.
PULL_WAIT_S = 15.0


def resolve_file(root: Path, file: str) -> Path:
    """The absolute path of a store location's ``file`` (root-relative posix, or absolute)."""
    p = Path(file)
    return p if p.is_absolute() else root / p


def _short(type_name: str) -> str:
    return type_name.rsplit(".", 1)[-1]


def _scope_label(path: str, type_name: str) -> str:
    return f"{path or '<root>'}: {_short(type_name)}"


def _location(root: Path, loc: "Location", encoder: PositionEncoder, texts: "TextSource") -> types.Location:
    path = resolve_file(root, loc.file)
    lines = texts.lines(path)
    return types.Location(uri=path_to_uri(path),
                          range=encoder.range(lines, loc.line, loc.column, loc.end_line, loc.end_column))


class TextSource:
    """Lines of files by path: open buffers first, then the disk (read once per conversion)."""

    def __init__(self, buffers: dict[Path, str] | None = None) -> None:
        self._buffers = buffers or {}
        self._cache: dict[Path, list[str]] = {}

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


def to_diagnostic(finding: "Finding", path: Path, root: Path, encoder: PositionEncoder,
                  texts: TextSource) -> types.Diagnostic:
    """The diagnostic of ``finding`` shown in ``path``: at its location when that is in ``path``,
    else at its anchor (a finding inside an installed library), with the library location, the
    call chain and the other module scopes as related information."""
    loc = finding.location
    shown = loc
    related: list[types.DiagnosticRelatedInformation] = []
    if resolve_file(root, loc.file) != path and finding.anchor is not None \
            and resolve_file(root, finding.anchor.file) == path:
        shown = finding.anchor
        related.append(types.DiagnosticRelatedInformation(
            location=_location(root, loc, encoder, texts),
            message=f"the failing code, in {loc.file}:{loc.line}"))
    lines = texts.lines(path)
    rng = encoder.range(lines, shown.line, shown.column, shown.end_line, shown.end_column)
    for step in finding.related:
        related.append(types.DiagnosticRelatedInformation(
            location=_location(root, step, encoder, texts), message=step.message or "called from here"))
    scopes = list(finding.scopes)
    if len(scopes) > 1:
        here = types.Location(uri=path_to_uri(path), range=rng)
        for scope in scopes[1:_MAX_SCOPES + 1]:
            where = f" (target {scope.target})" if scope.target and scope.target != finding.target else ""
            related.append(types.DiagnosticRelatedInformation(
                location=here, message=f"also in {_scope_label(scope.path, scope.type)}{where}"))
        rest = scopes[_MAX_SCOPES + 1:]
        if rest:
            related.append(types.DiagnosticRelatedInformation(
                location=here, message=f"also in {len(rest)} more module instances "
                                       f"({', '.join(s.path or '<root>' for s in rest[:3])}, ...)"))
    message = finding.message
    if scopes:
        message += f"\nin {_scope_label(scopes[0].path, scopes[0].type)}"
        if len(scopes) > 1:
            message += f" and {len(scopes) - 1} more"
    if finding.hint:
        message += f"\nhint: {finding.hint}"
    return types.Diagnostic(
        range=rng,
        message=message,
        severity=_SEVERITY.get(finding.severity, types.DiagnosticSeverity.Error),
        code=finding.code,
        code_description=types.CodeDescription(href=CODES_URL),
        source=SOURCE,
        tags=[types.DiagnosticTag.Unnecessary] if finding.code in _UNNECESSARY else None,
        related_information=related or None,
        data={"target": finding.target, "code": finding.code},
    )


@dataclass
class _Published:
    version: int | None
    result_id: str


class DiagnosticsFeature:
    """Push and pull diagnostics for every folder of one server."""

    def __init__(self, ls: "FxscopeServer") -> None:
        self.ls = ls
        self._published: dict[str, _Published] = {}
        self._changed: asyncio.Event | None = None
        self._refresh_pending = False

    # ------------------------------------------------------------------ capabilities
    @property
    def pull(self) -> bool:
        """The client pulls (``textDocument.diagnostic``); otherwise the server pushes."""
        caps = self.ls.client_capabilities
        return bool(caps and caps.text_document and caps.text_document.diagnostic is not None)

    @property
    def refresh_support(self) -> bool:
        caps = self.ls.client_capabilities
        ws = caps.workspace if caps else None
        return bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)

    # ------------------------------------------------------------------ conversion
    def diagnostics_for(self, folder: Folder, path: Path, findings: Sequence["Finding"]) -> list[types.Diagnostic]:
        texts = TextSource(self.ls.buffers())
        out = []
        for f in findings:
            try:
                out.append(to_diagnostic(f, path, folder.root, self.ls.encoder, texts))
            except Exception:  # one odd finding must not hide the others
                log.exception("could not convert a %s finding in %s", getattr(f, "code", "?"), path)
        return out

    def _findings(self, folder: Folder, path: Path) -> Any:
        if not self.ls.options_for(folder).enable:
            return None
        return folder.workspace.findings_for(path)

    # ------------------------------------------------------------------ events (on the loop)
    def results_changed(self, folder: Folder, files: Sequence[Path]) -> None:
        """New results for ``files`` of ``folder``: push them, or ask pull clients to refresh."""
        if self._changed is not None:
            self._changed.set()
        if self.pull:
            self._schedule_refresh()
            return
        for path in files:
            self.publish(folder, path)

    def publish_all(self, folder: Folder) -> None:
        """Push every file of ``folder`` that has findings, and every open document."""
        if self.pull:
            self._schedule_refresh()
            return
        paths = set(folder.workspace.files_with_findings())
        paths.update(p for p in self.ls.open_paths() if self.ls.folders.for_path(p, create=False) is folder)
        for uri, state in list(self._published.items()):
            p = uri_to_path(uri)
            if p is not None and state.result_id and self.ls.folders.for_path(p, create=False) is folder:
                paths.add(p)
        for path in sorted(paths):
            self.publish(folder, path)

    def publish(self, folder: Folder, path: Path, *, force: bool = False) -> None:
        """Push the findings of ``path`` unless they are older than what the client has."""
        uri = path_to_uri(path)
        ff = self._findings(folder, path)
        open_version = self.ls.document_version(path)
        if ff is None:  # disabled: clear
            if uri in self._published:
                self._send(uri, [], open_version)
                self._published.pop(uri, None)
            return
        last = self._published.get(uri)
        version = ff.version if open_version is not None else None
        if open_version is not None and version is None and self._buffer_is_disk(path):
            version = open_version  # computed from the disk, which holds exactly the buffer's text
        if open_version is not None and last is not None and last.version is not None:
            if version is None or version < last.version:
                return  # older than what the client shows: keep the last results
        if open_version is not None and version is not None and version > open_version:
            return
        if not force and last is not None and last.version == version and last.result_id == ff.result_id:
            return
        diagnostics = self.diagnostics_for(folder, path, ff.findings)
        if not diagnostics and last is None and open_version is None:
            return  # nothing was shown for this closed file: nothing to clear
        self._published[uri] = _Published(version, ff.result_id)
        self._send(uri, diagnostics, version)

    def _buffer_is_disk(self, path: Path) -> bool:
        try:
            return path.read_text(encoding="utf-8") == self.ls.text_of(path)
        except (OSError, UnicodeDecodeError):
            return False

    def document_closed(self, folder: Folder, path: Path) -> None:
        """The buffer is gone: its disk results count again."""
        self._published.pop(path_to_uri(path), None)
        if not self.pull:
            self.publish(folder, path, force=True)

    def _send(self, uri: str, diagnostics: list[types.Diagnostic], version: int | None) -> None:
        self.ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version))

    def _schedule_refresh(self) -> None:
        if not self.refresh_support or self._refresh_pending:
            return
        self._refresh_pending = True

        def send() -> None:
            self._refresh_pending = False
            if self.ls.is_shut_down:
                return
            try:
                self.ls.workspace_diagnostic_refresh(None)
            except Exception:
                log.exception("workspace/diagnostic/refresh failed")

        asyncio.get_running_loop().call_later(0.05, send)

    # ------------------------------------------------------------------ pull
    async def _current(self, folder: Folder, path: Path) -> Any:
        """The findings of ``path``; for a client that cannot be told to refresh, first wait
        (bounded) while a trace that may change them is debouncing, queued or running."""
        version = self.ls.document_version(path)
        if version is None or self.refresh_support:
            return self._findings(folder, path)
        if self._changed is None:
            self._changed = asyncio.Event()
        deadline = time.monotonic() + PULL_WAIT_S
        while time.monotonic() < deadline and self.ls.busy(folder, path):
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=0.1)
            except asyncio.TimeoutError:
                pass
            if self.ls.document_version(path) != version:
                break  # a newer edit: answer now, the client pulls again for it
        return self._findings(folder, path)

    async def pull_document(self, params: types.DocumentDiagnosticParams) -> types.DocumentDiagnosticReport:
        path = uri_to_path(params.text_document.uri)
        folder = self.ls.folders.for_path(path)
        if path is None or folder is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="none")
        ff = await self._current(folder, path)
        if ff is None:
            return types.RelatedFullDocumentDiagnosticReport(items=[], result_id="disabled")
        if params.previous_result_id == ff.result_id:
            return types.RelatedUnchangedDocumentDiagnosticReport(result_id=ff.result_id)
        return types.RelatedFullDocumentDiagnosticReport(
            items=self.diagnostics_for(folder, path, ff.findings), result_id=ff.result_id)

    async def pull_workspace(self, params: types.WorkspaceDiagnosticParams) -> types.WorkspaceDiagnosticReport:
        previous = {p.uri: p.value for p in params.previous_result_ids or ()}
        items: list[Any] = []
        seen: set[str] = set()
        for folder in self.ls.folders.all():
            paths = set(folder.workspace.files_with_findings())
            for uri in previous:
                p = uri_to_path(uri)
                if p is not None and self.ls.folders.for_path(p, create=False) is folder:
                    paths.add(p)
            for path in sorted(paths):
                uri = path_to_uri(path)
                if uri in seen:
                    continue
                seen.add(uri)
                ff = self._findings(folder, path)
                version = self.ls.document_version(path)
                if ff is None:
                    items.append(types.WorkspaceFullDocumentDiagnosticReport(uri=uri, version=version, items=[]))
                elif previous.get(uri) == ff.result_id:
                    items.append(types.WorkspaceUnchangedDocumentDiagnosticReport(
                        uri=uri, version=version, result_id=ff.result_id))
                else:
                    items.append(types.WorkspaceFullDocumentDiagnosticReport(
                        uri=uri, version=version, items=self.diagnostics_for(folder, path, ff.findings),
                        result_id=ff.result_id))
        return types.WorkspaceDiagnosticReport(items=items)


def register(ls: "FxscopeServer") -> DiagnosticsFeature:
    """Register the pull handlers; the server calls the push side on results."""
    feature = DiagnosticsFeature(ls)

    @ls.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                types.DiagnosticOptions(identifier="fxscope", inter_file_dependencies=True,
                                        workspace_diagnostics=True))
    async def document_diagnostic(params: types.DocumentDiagnosticParams) -> Any:
        return await feature.pull_document(params)

    @ls.feature(types.WORKSPACE_DIAGNOSTIC)
    async def workspace_diagnostic(params: types.WorkspaceDiagnosticParams) -> Any:
        return await feature.pull_workspace(params)

    return feature
