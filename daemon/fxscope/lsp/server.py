"""The fxscope language server (pygls 2): lifecycle, document sync, settings, and feature
registration. One :class:`~fxscope.session.Workspace` per workspace folder does the work;
this process never imports torch and never traces (the Workspace's worker pool does).

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
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from lsprotocol import types
from pygls.exceptions import (JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest,
                              JsonRpcServerNotInitialized)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from fxscope import __version__
from fxscope.lsp import code_actions, code_lens, commands, diagnostics, hover
from fxscope.lsp.folders import Folder, Folders, path_to_uri, uri_to_path
from fxscope.lsp.options import SECTION, ServerOptions, parse_options
from fxscope.lsp.positions import PositionEncoder, negotiate
from fxscope.lsp.progress import ProgressFeature
from fxscope.lsp.watch import WATCH_GLOBS, FolderWatcher, is_relevant

__all__ = ["FxscopeServer", "create_server", "DEFAULT_DEBOUNCE_S"]

log = logging.getLogger("fxscope.lsp")

#: The server's debounce between the last edit and the re-trace when the client sets none: short
#: enough for an isolated edit to stay inside the latency budget (a newer edit kills the running
#: trace, so a burst still ends in one trace of the final text).
DEFAULT_DEBOUNCE_S = 0.05

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

    def __init__(self, server: "FxscopeServer") -> None:
        super().__init__()
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
            kind = next(t for level, t in _MESSAGE_TYPES if record.levelno >= level)
            self.server.post(self.server.window_log_message, types.LogMessageParams(type=kind, message=message))
        except Exception:  # logging must never raise
            pass


class FxscopeServer(LanguageServer):
    """The language server. Feature modules call the helpers below (documents, folders, options)."""

    def __init__(self) -> None:
        super().__init__("fxscope", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=FxscopeProtocol, max_workers=4)
        self.pid = os.getpid()
        self.options = ServerOptions()
        self._folder_options: dict[str, ServerOptions] = {}
        self.encoder = PositionEncoder("utf-16")
        self.folders = Folders(self._make_workspace)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.is_shut_down = False
        self.tcp = False
        self._closed = False
        self._open: dict[Path, str] = {}
        self._last_change: dict[Path, float] = {}
        self._watchers: dict[Path, FolderWatcher] = {}
        self._started: set[Path] = set()
        self._ready: set[Path] = set()  # start() returned: the start-up round is scheduled
        self._refresh_pending = False
        self._close_lock = threading.Lock()
        self._log_handler = _ClientLogHandler(self)
        self._log_handler.setFormatter(logging.Formatter("%(message)s"))
        self.diagnostics = diagnostics.register(self)
        self.hover = hover.register(self)
        self.lens = code_lens.register(self)
        self.actions = code_actions.register(self)
        self.commands = commands.register(self)
        self.progress = ProgressFeature(self)
        _register_lifecycle(self)

    # ------------------------------------------------------------------ threads -> loop
    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the server's event loop (callable from any thread)."""
        loop = self.loop
        if loop is None or loop.is_closed() or self._closed:
            return
        try:
            loop.call_soon_threadsafe(self._guarded, fn, args)
        except RuntimeError:  # the loop is closing
            pass

    @staticmethod
    def _guarded(fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("handling a workspace event failed")

    # ------------------------------------------------------------------ documents
    def open_paths(self) -> list[Path]:
        return list(self._open)

    def document_version(self, path: Path) -> int | None:
        """The version of the open document ``path`` (None when it is not open)."""
        uri = self._open.get(path)
        if uri is None:
            return None
        try:
            return self.workspace.get_text_document(uri).version
        except Exception:
            return None

    def text_of(self, path: Path) -> str | None:
        """The buffer text of ``path`` when open, else its text on disk (None when unreadable)."""
        uri = self._open.get(path)
        if uri is not None:
            try:
                return self.workspace.get_text_document(uri).source
            except Exception:
                return None
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def buffers(self) -> dict[Path, str]:
        out = {}
        for path in list(self._open):
            text = self.text_of(path)
            if text is not None:
                out[path] = text
        return out

    def busy(self, folder: Folder, path: Path) -> bool:
        """A trace that may change ``path``'s results is debouncing, queued or running."""
        opts = self.options_for(folder)
        debounce = (opts.debounce_ms / 1000) if opts.debounce_ms is not None else DEFAULT_DEBOUNCE_S
        if folder.root not in self._ready:
            return True  # the start-up check has not been scheduled yet
        if time.monotonic() - self._last_change.get(path, 0.0) < debounce + 0.25:
            return True
        try:
            return not folder.workspace.wait_idle(0)
        except Exception:
            return False

    def python_path(self, folder: Folder) -> list[Path]:
        config = getattr(folder.workspace, "config", None)
        paths = getattr(config, "python_path", None)
        if paths:
            return list(paths)
        try:
            from fxscope.project.config import load_config

            return list(load_config(folder.root).python_path)
        except Exception:
            return [folder.root, folder.root / "src"]

    # ------------------------------------------------------------------ settings
    def options_for(self, folder: Folder) -> ServerOptions:
        return self._folder_options.get(folder.uri, self.options)

    def _settings(self, opts: ServerOptions) -> Any:
        from fxscope.session import SessionSettings

        debounce = opts.debounce_ms / 1000 if opts.debounce_ms is not None else DEFAULT_DEBOUNCE_S
        return SessionSettings(debounce_s=debounce, trace_on=opts.trace_on, workers=opts.workers,
                               timeout=opts.timeout, enabled=opts.enable)

    def _make_workspace(self, root: Path, uri: str) -> Any:
        from fxscope.session import Workspace

        opts = self._folder_options.get(uri, self.options)
        return Workspace(
            root, settings=self._settings(opts),
            on_results=lambda ev: self.post(self._on_results, root, ev),
            on_progress=lambda ev: self.post(self._on_progress, root, ev),
            on_warning=lambda msg: log.warning("%s: %s", root.name, msg),
        )

    def apply_log_level(self) -> None:
        self._log_handler.setLevel(_LEVELS.get(self.options.log_level, logging.INFO))

    # ------------------------------------------------------------------ workspace events
    def _on_results(self, root: Path, event: Any) -> None:
        folder = self.folders.get(root)
        if folder is None or self.is_shut_down:
            return
        self.diagnostics.results_changed(folder, list(event.files))
        self._schedule_refresh()

    def _on_progress(self, root: Path, event: Any) -> None:
        folder = self.folders.get(root)
        if folder is None or self.is_shut_down:
            return
        self.progress.event(folder, event)
        if self.diagnostics._changed is not None:
            self.diagnostics._changed.set()
        if event.done >= event.total and event.running == 0:
            # a round ended: results may now carry a newer version for unchanged findings
            for path in self.open_paths():
                if self.folders.for_path(path, create=False) is folder and not self.diagnostics.pull:
                    self.diagnostics.publish(folder, path)
            self._schedule_refresh()

    def _schedule_refresh(self) -> None:
        """Ask the client to re-request code lenses and inlay hints (coalesced)."""
        caps = self.client_capabilities
        ws = caps.workspace if caps else None
        lens = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        hints = bool(ws and ws.inlay_hint and ws.inlay_hint.refresh_support) and self.options.inlay_hints
        if not (lens or hints) or self._refresh_pending or self.loop is None:
            return
        self._refresh_pending = True

        def send() -> None:
            self._refresh_pending = False
            if self.is_shut_down:
                return
            if lens:
                self.workspace_code_lens_refresh(None)
            if hints:
                self.workspace_inlay_hint_refresh(None)

        self.loop.call_later(0.2, send)

    # ------------------------------------------------------------------ folders
    def start_folder(self, folder: Folder) -> None:
        """Start checking ``folder`` (cached results first) and watch it."""
        if folder.root in self._started or self.is_shut_down:
            return
        self._started.add(folder.root)
        self.progress.expect_round(folder, f"fxscope: checking {folder.name}")

        def start() -> None:
            try:
                folder.workspace.start()
            except Exception:
                log.exception("starting the workspace %s failed", folder.root)
                return
            finally:
                self._ready.add(folder.root)
            self.post(self.diagnostics.publish_all, folder)

        threading.Thread(target=start, name=f"fxscope-start-{folder.name}", daemon=True).start()
        if self.options_for(folder).watch:
            watcher = FolderWatcher(folder.root, lambda paths, f=folder: self._disk_changed(f, paths))
            if watcher.start():
                self._watchers[folder.root] = watcher

    def _disk_changed(self, folder: Folder, paths: Sequence[Path]) -> None:
        if not self.is_shut_down:
            folder.workspace.files_changed(paths)

    def remove_folder(self, root: Path) -> None:
        watcher = self._watchers.pop(root, None)
        if watcher is not None:
            watcher.stop()
        self._started.discard(root)
        self.folders.remove(root)

    def close_all(self) -> None:
        """Stop watching and close every Workspace (kills every trace process). Idempotent."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        for watcher in list(self._watchers.values()):
            watcher.stop()
        self._watchers.clear()
        self.folders.close_all()

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Errors outside a request (an unreadable message, a failing notification handler) go to
        the log, never to a popup: the request ones already got their error response."""
        log.warning("%s: %s", getattr(source, "__name__", source), error)

    def shutdown(self) -> None:  # pygls: the transport ended
        self.close_all()
        super().shutdown()


async def _configuration(ls: FxscopeServer, folders: Sequence[Folder]) -> list[ServerOptions] | None:
    """Settings per folder from ``workspace/configuration`` (None when the client has none)."""
    caps = ls.client_capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return None
    items = [types.ConfigurationItem(scope_uri=f.uri, section=SECTION) for f in folders]
    items.append(types.ConfigurationItem(section=SECTION))
    try:
        answer = await asyncio.wait_for(
            ls.workspace_configuration_async(types.ConfigurationParams(items=items)), timeout=5)
    except Exception as e:
        log.info("workspace/configuration failed: %s", e)
        return None
    if not isinstance(answer, list) or len(answer) != len(items):
        return None
    warn = lambda m: log.warning("%s", m)  # noqa: E731
    return [parse_options(a, warn) for a in answer]


async def _apply_configuration(ls: FxscopeServer, folders: Sequence[Folder]) -> None:
    opts = await _configuration(ls, folders)
    if opts is None:
        return
    *per_folder, global_opts = opts
    ls.options = ls.options.merged(global_opts)
    ls.apply_log_level()
    for folder, o in zip(folders, per_folder):
        new = ls.options.merged(o)
        if new != ls._folder_options.get(folder.uri):
            ls._folder_options[folder.uri] = new
            try:
                folder.workspace.update_settings(ls._settings(new))
            except Exception:
                log.exception("applying the settings of %s failed", folder.root)


def _register_lifecycle(ls: FxscopeServer) -> None:
    @ls.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        warn = lambda m: log.warning("%s", m)  # noqa: E731
        ls.options = parse_options(params.initialization_options, warn)
        general = params.capabilities.general if params.capabilities else None
        ls.encoder = PositionEncoder(negotiate(general.position_encodings if general else None))
        roots: list[tuple[Path, str, str]] = []
        for f in params.workspace_folders or ():
            path = uri_to_path(f.uri)
            if path is not None:
                roots.append((path, f.name, f.uri))
        if not roots:
            root_uri = params.root_uri or (path_to_uri(Path(params.root_path)) if params.root_path else None)
            path = uri_to_path(root_uri) if root_uri else None
            if path is not None:
                roots.append((path, path.name, root_uri))
        for path, name, uri in roots:
            if path.is_dir():
                ls.folders.add(path, name, uri)

    @ls.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        ls.loop = asyncio.get_running_loop()
        logging.getLogger("fxscope").addHandler(ls._log_handler)
        ls.apply_log_level()
        folders = ls.folders.all()
        await _apply_configuration(ls, folders)
        caps = ls.client_capabilities
        watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
        if watched is not None and watched.dynamic_registration:
            opts = types.DidChangeWatchedFilesRegistrationOptions(
                watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCH_GLOBS])
            try:
                await ls.client_register_capability_async(types.RegistrationParams(registrations=[
                    types.Registration(id="fxscope-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                                       register_options=opts)]))
            except Exception as e:
                log.info("could not register file watching with the client: %s", e)
        for folder in ls.folders.all():
            ls.start_folder(folder)
        log.info("fxscope %s serving %d folder(s), %s positions, %s diagnostics", __version__,
                 len(ls.folders.all()), ls.encoder.encoding, "pull" if ls.diagnostics.pull else "push")

    @ls.feature(types.SHUTDOWN)
    def shutdown(params: Any) -> None:
        ls.is_shut_down = True
        ls.progress.close()
        ls.close_all()

    @ls.feature(types.EXIT)
    def exit_(params: Any) -> None:
        ls.is_shut_down = True
        ls.close_all()
        if ls.tcp:  # pygls would raise SystemExit inside the connection callback: end here
            sys.stderr.flush()
            os._exit(0 if ls.protocol._shutdown else 1)

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        path = uri_to_path(doc.uri)
        folder = ls.folders.for_path(path)
        if path is None or folder is None:
            return
        ls._open[path] = doc.uri
        if folder.root not in ls._started and ls.loop is not None:
            ls.start_folder(folder)
        folder.workspace.open(path, doc.version, doc.text)
        if not ls.diagnostics.pull:
            ls.diagnostics.publish(folder, path, force=True)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        folder = ls.folders.for_path(path, create=False)
        if path is None or folder is None or path not in ls._open:
            return
        doc = ls.workspace.get_text_document(params.text_document.uri)
        ls._last_change[path] = time.monotonic()
        folder.workspace.change(path, params.text_document.version, doc.source)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        folder = ls.folders.for_path(path, create=False)
        if path is None or folder is None:
            return
        folder.workspace.save(path, ls.text_of(path) if path in ls._open else params.text)

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        path = uri_to_path(params.text_document.uri)
        folder = ls.folders.for_path(path, create=False)
        if path is None or ls._open.pop(path, None) is None:
            return
        ls._last_change.pop(path, None)
        if folder is not None:
            folder.workspace.close(path)
            ls.diagnostics.document_closed(folder, path)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        caps = ls.client_capabilities
        if caps and caps.workspace and caps.workspace.configuration:
            await _apply_configuration(ls, ls.folders.all())
            return
        opts = ls.options.merged(parse_options(params.settings, lambda m: log.warning("%s", m)))
        ls.options = opts
        ls.apply_log_level()
        for folder in ls.folders.all():
            ls._folder_options[folder.uri] = opts
            folder.workspace.update_settings(ls._settings(opts))

    @ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
    async def did_change_folders(params: types.DidChangeWorkspaceFoldersParams) -> None:
        for f in params.event.removed or ():
            path = uri_to_path(f.uri)
            if path is not None:
                ls.remove_folder(path.resolve())
        added = []
        for f in params.event.added or ():
            path = uri_to_path(f.uri)
            folder = ls.folders.add(path, f.name, f.uri) if path is not None and path.is_dir() else None
            if folder is not None:
                added.append(folder)
        if added:
            await _apply_configuration(ls, added)
            for folder in added:
                ls.start_folder(folder)

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(params: types.DidChangeWatchedFilesParams) -> None:
        by_folder: dict[Path, list[Path]] = {}
        for change in params.changes:
            path = uri_to_path(change.uri)
            folder = ls.folders.for_path(path, create=False)
            if path is not None and folder is not None and is_relevant(path, folder.root):
                by_folder.setdefault(folder.root, []).append(path)
        for root, paths in by_folder.items():
            folder = ls.folders.get(root)
            if folder is not None:
                folder.workspace.files_changed(paths)


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
