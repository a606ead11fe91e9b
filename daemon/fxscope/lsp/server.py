"""The fxscope language server (pygls 2): the process, its transport and the registration of
every handler module (lifecycle, documents, notebooks, configuration, folders, diagnostics, hover,
code lens, code actions, commands). One :class:`~fxscope.session.Workspace` per workspace folder does the
work; this process never imports torch and never traces (the Workspace's worker pool does).

Robustness: a malformed request gets an error response (never a crash or a hang), requests after
``shutdown`` get ``InvalidRequest``, requests before ``initialize`` get ``ServerNotInitialized``,
and ``shutdown``/``exit`` (or the client going away) close every Workspace, killing every trace
process.

>>> server = create_server()
>>> sorted(m for m in server.protocol.fm.features if m.startswith("textDocument/"))[:3]
['textDocument/codeAction', 'textDocument/codeLens', 'textDocument/diagnostic']
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.exceptions import (JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest,
                              JsonRpcServerNotInitialized)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from fxscope import __version__
from fxscope.lsp import (code_actions, code_lens, commands, configuration, diagnostics, documents, folders, hover,
                         lifecycle, notebooks, progress)
from fxscope.lsp.context import DEFAULT_DEBOUNCE_S, ServerContext
from fxscope.lsp.progress import ProgressFeature
from fxscope.lsp.workspaces import Folders
from fxscope.session import Workspace

__all__ = ["FxscopeServer", "create_server", "DEFAULT_DEBOUNCE_S"]

log = logging.getLogger("fxscope.lsp")

_INVALID = object()  # a message that could not be read (already answered)
_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "info": logging.INFO, "debug": logging.DEBUG}
_MESSAGE_TYPES = [(logging.ERROR, types.MessageType.Error), (logging.WARNING, types.MessageType.Warning),
                  (logging.INFO, types.MessageType.Info), (0, types.MessageType.Log)]


class FxscopeProtocol(LanguageServerProtocol):
    """pygls' protocol with the error answers the LSP specification asks for."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:
            if "jsonrpc" in data and "method" in data and "id" in data:
                self._send_response(data["id"], None, JsonRpcInvalidParams(
                    f"invalid params for {data.get('method')!r}").to_response_error())
            else:
                log.warning("ignored a malformed %r message: %s", data.get("method"), error)
            return _INVALID

    def handle_message(self, message: Any) -> None:
        if message is _INVALID or not hasattr(message, "jsonrpc"):
            return
        method = getattr(message, "method", None)
        is_request = method is not None and getattr(message, "id", None) is not None
        if is_request and self._shutdown and method != types.EXIT:
            self._send_response(message.id, None, JsonRpcInvalidRequest(
                f"{method}: the server is shutting down").to_response_error())
            return
        if is_request and self._workspace is None and method != types.INITIALIZE:
            self._send_response(message.id, None, JsonRpcServerNotInitialized(
                f"{method}: the server is not initialized").to_response_error())
            return
        super().handle_message(message)
        if method is not None and not is_request:
            self._drop_finished_futures()

    def _drop_finished_futures(self) -> None:
        """pygls 2.1 files the future of every notification run by one of its generator handlers
        (didOpen, didChange, didSave, didClose...) under a fresh id and never removes it: about
        1.7 KB held per edit, forever. Finished futures need no entry (their callbacks hold them),
        so they are dropped after each notification. pygls has no public API for this; a version
        without the attribute is left alone rather than failing every notification."""
        futures = getattr(self, "_request_futures", None)
        if not isinstance(futures, dict):
            return
        for key, future in list(futures.items()):  # one copy: handler threads pop their own entries
            if future.done():
                futures.pop(key, None)


class _ClientLogHandler(logging.Handler):
    """Sends the server's own log records to the client as ``window/logMessage``."""

    def __init__(self, server: FxscopeServer) -> None:
        super().__init__()
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            kind = next(t for level, t in _MESSAGE_TYPES if record.levelno >= level)
            self.server.post(self.server.window_log_message, types.LogMessageParams(type=kind, message=message))
        except Exception:  # noqa: BLE001 - logging must never raise
            pass


class FxscopeServer(LanguageServer):
    """The language server: pygls' transport, and the :class:`~fxscope.lsp.context.Client` and
    :class:`~fxscope.lsp.lifecycle.Host` that the handler modules use."""

    def __init__(self) -> None:
        super().__init__("fxscope", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=notebooks.SYNC_OPTIONS, protocol_cls=FxscopeProtocol, max_workers=4)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tcp = False
        self._closed = False
        self._log_handler = _ClientLogHandler(self)
        self._log_handler.setFormatter(logging.Formatter("%(message)s"))
        self.folder_feature: folders.FolderFeature
        self.ctx = ServerContext(self, Folders(self._make_workspace))
        self.folder_feature = folders.FolderFeature(self.ctx)
        self.ctx.progress = ProgressFeature(self.ctx)
        self.ctx.notebooks = notebooks.NotebookFeature(self)
        self.ctx.diagnostics = diagnostics.register(self, self.ctx)
        lifecycle.register(self, self.ctx, self, self.folder_feature, lambda: self.tcp)
        configuration.register(self, self.ctx)
        folders.register(self, self.ctx, self.folder_feature)
        documents.register(self, self.ctx, self.folder_feature)
        notebooks.register(self, self.ctx, self.folder_feature)
        hover.register(self, self.ctx)
        code_lens.register(self, self.ctx)
        code_actions.register(self, self.ctx)
        commands.register(self, self.ctx)
        progress.register(self, self.ctx)

    def _make_workspace(self, root: Path, uri: str) -> Workspace:
        return self.folder_feature.make_workspace(root, uri)

    # ------------------------------------------------------------------ Host
    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        logging.getLogger("fxscope").addHandler(self._log_handler)

    def exit_process(self) -> None:
        sys.stderr.flush()
        os._exit(0 if self.protocol._shutdown else 1)

    # ------------------------------------------------------------------ Client
    def post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the server's event loop (callable from any thread)."""
        loop = self.loop
        if loop is None or loop.is_closed() or self._closed:
            return
        try:
            loop.call_soon_threadsafe(self._guarded, fn, args)
        except RuntimeError:  # the loop is closing
            pass

    @staticmethod
    def _guarded(fn: Callable[..., None], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("handling a workspace event failed")

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        if self.loop is not None:
            self.loop.call_later(delay, fn)

    def publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None:
        self.text_document_publish_diagnostics(params)

    def refresh_diagnostics(self) -> None:
        self.workspace_diagnostic_refresh(None)

    def refresh_code_lens(self) -> None:
        self.workspace_code_lens_refresh(None)

    def refresh_inlay_hints(self) -> None:
        self.workspace_inlay_hint_refresh(None)

    def show_message(self, params: types.ShowMessageParams) -> None:
        self.window_show_message(params)

    def create_progress(self, token: str) -> asyncio.Future[Any]:
        return asyncio.ensure_future(self.work_done_progress.create_async(token))

    def send_progress(self, token: str, value: types.WorkDoneProgressBegin | types.WorkDoneProgressReport
                      | types.WorkDoneProgressEnd) -> None:
        if isinstance(value, types.WorkDoneProgressBegin):
            self.work_done_progress.begin(token, value)
        elif isinstance(value, types.WorkDoneProgressReport):
            self.work_done_progress.report(token, value)
        else:
            self.work_done_progress.end(token, value)
            self.work_done_progress.tokens.pop(token, None)  # pygls keeps every token otherwise

    def log_message(self, message: str) -> None:
        if self._log_handler.level <= logging.INFO:
            self.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=message))

    def configuration(self, params: types.ConfigurationParams) -> Awaitable[Sequence[Any]]:
        return self.workspace_configuration_async(params)

    def register_capability(self, params: types.RegistrationParams) -> Awaitable[None]:
        return self.client_register_capability_async(params)

    def apply_log_level(self, level: str) -> None:
        self._log_handler.setLevel(_LEVELS.get(level, logging.INFO))

    # ------------------------------------------------------------------ shutdown
    def close_all(self) -> None:
        """Stop watching and close every Workspace (kills every trace process). Idempotent."""
        self._closed = True
        self.folder_feature.close_all()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors outside a request (an unreadable message, a failing notification handler) go to
        the log, never to a popup: the request ones already got their error response."""
        log.warning("%s: %s", getattr(source, "__name__", source), error)

    def shutdown(self) -> None:  # pygls: the transport ended
        self.close_all()
        super().shutdown()  # type: ignore[no-untyped-call]  # pygls' own, unannotated


SWITCH_INTERVAL_S = 0.0005


def create_server() -> FxscopeServer:
    """A new, unstarted server (``start_io()`` or ``start_tcp(host, port)`` runs it)."""
    return FxscopeServer()


def serve(tcp: tuple[str, int] | None = None) -> int:
    """Run the server on stdio (default) or TCP until the client disconnects or sends ``exit``.

    On stdio the protocol stream gets a private copy of fd 1 and fd 1 itself is pointed at
    stderr, so nothing printed in this process (or inherited by a child) can corrupt the stream.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="fxscope: %(levelname)s %(message)s")
    logging.getLogger("pygls").setLevel(logging.WARNING)
    # The event loop, the pool's reader and the check threads hand each other every edit's
    # result: with the default 5 ms GIL switch interval, a thread woken for a hand-off can wait
    # that long behind another running Python code (the check thread validates a 2,000-node
    # result for ~3 ms). A long C call (json) holds the GIL whatever the interval.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    server = create_server()
    try:
        if tcp is not None:
            server.tcp = True
            server.start_tcp(*tcp)
            return 0
        stdin = os.fdopen(os.dup(sys.stdin.fileno()), "rb", buffering=0)
        stdout = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
        sys.stdout.flush()
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, sys.stdin.fileno())  # children never read the protocol stream
        os.close(devnull)
        sys.stdout = sys.stderr
        server.start_io(stdin, stdout)
        return 0
    finally:
        server.close_all()
