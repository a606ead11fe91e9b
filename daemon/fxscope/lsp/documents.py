"""Document sync: ``didOpen``, ``didChange``, ``didSave``, ``didClose`` handed to the session of
the folder that holds the document (its :class:`~fxscope.session.documents.DocumentStore` is the
only place versions live; pygls keeps the text only to apply incremental changes). Each change
tells the session how the document's lines moved (from its content changes; a whole new text by
a line diff), so results of earlier versions follow the edits until new ones arrive."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.context import ServerContext
from fxscope.lsp.folders import FolderFeature
from fxscope.lsp.positions import content_edits
from fxscope.lsp.workspaces import uri_to_path

__all__ = ["register"]


def register(ls: LanguageServer, ctx: ServerContext, folders: FolderFeature) -> None:
    """Register the document notifications."""

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        path = uri_to_path(doc.uri)
        folder = ctx.folders.for_path(path)
        if path is None or folder is None:
            return
        if folder.root not in ctx.started and ctx.initialized:
            folders.start(folder)
        folder.workspace.open(path, doc.version, doc.text)
        if not ctx.diagnostics.pull:
            ctx.diagnostics.publish(folder, path, force=True)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        folder = ctx.folders.for_path(path, create=False)
        if path is None or folder is None or not folder.workspace.documents.is_open(str(path)):
            return
        doc = ls.workspace.get_text_document(params.text_document.uri)
        before = folder.workspace.documents.text(str(path))
        replayed = content_edits(before, params.content_changes, ctx.encoder) if before is not None else None
        edits = replayed[1] if replayed is not None and replayed[0] == doc.source else None  # else: a line diff
        folder.workspace.change(path, params.text_document.version, doc.source, edits)
        ctx.diagnostics.document_changed(folder, path)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        folder = ctx.folders.for_path(path, create=False)
        if path is None or folder is None:
            return
        buffer = folder.workspace.documents.text(str(path))
        folder.workspace.save(path, buffer if buffer is not None else params.text)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        folder = ctx.folders.for_path(path, create=False)
        if path is None or folder is None or not folder.workspace.documents.is_open(str(path)):
            return
        folder.workspace.close(path)
        ctx.diagnostics.document_closed(folder, path)
