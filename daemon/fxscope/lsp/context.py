"""The small typed context every handler module depends on, instead of the concrete server.

It holds what handlers share: the folders and their workspaces, the settings, the negotiated
position encoding and client capabilities, the open documents (read from each folder's session,
the only place their versions live), the features other handlers call (diagnostics, progress,
lens refresh) and :class:`Client`, the few messages a handler sends to the client.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from lsprotocol import types

from fxscope.lsp.workspaces import Folder, Folders
from fxscope.lsp.options import ServerOptions
from fxscope.lsp.positions import PositionEncoder
from fxscope.session import SessionSettings
from fxscope.session.data import DEFAULT_DEBOUNCE_S

if TYPE_CHECKING:
    from fxscope.lsp.diagnostics import DiagnosticsFeature
    from fxscope.lsp.notebooks import NotebookFeature
    from fxscope.lsp.progress import ProgressFeature

__all__ = ["Client", "Documents", "ServerContext", "DEFAULT_DEBOUNCE_S"]

log = logging.getLogger("fxscope.lsp")


class Client(Protocol):
    """The messages handlers send to the client (the server implements them over pygls)."""

    def publish_diagnostics(self, params: types.PublishDiagnosticsParams) -> None: ...

    def refresh_diagnostics(self) -> None: ...

    def refresh_code_lens(self) -> None: ...

    def refresh_inlay_hints(self) -> None: ...

    def show_message(self, params: types.ShowMessageParams) -> None: ...

    def create_progress(self, token: str) -> asyncio.Future[Any]: ...

    def send_progress(self, token: str, value: types.WorkDoneProgressBegin | types.WorkDoneProgressReport
                      | types.WorkDoneProgressEnd) -> None: ...

    def configuration(self, params: types.ConfigurationParams) -> Awaitable[Sequence[Any]]: ...

    def register_capability(self, params: types.RegistrationParams) -> Awaitable[None]: ...

    def apply_log_level(self, level: str) -> None:
        """Send the server's own log records from ``level`` up to the client."""

    def log_message(self, message: str) -> None:
        """One info line in the client's log (``window/logMessage``), unless the log level is higher."""

    def post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the server's event loop (callable from any thread)."""

    def call_later(self, delay: float, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the event loop after ``delay`` seconds."""


class Documents:
    """The open documents, read from the session of the folder that holds each one."""

    def __init__(self, folders: Folders) -> None:
        self._folders = folders

    def version(self, path: Path) -> int | None:
        """The version of the open document ``path`` (None when it is not open)."""
        folder = self._folders.for_path(path, create=False)
        return folder.workspace.documents.version(str(path)) if folder is not None else None

    def text(self, path: Path) -> str | None:
        """The buffer text of ``path`` when open, else its text on disk (None when unreadable)."""
        folder = self._folders.for_path(path, create=False)
        text = folder.workspace.documents.text(str(path)) if folder is not None else None
        if text is not None:
            return text
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    def open_paths(self, folder: Folder | None = None) -> list[Path]:
        """The open documents (of ``folder``, or of every folder)."""
        folders = [folder] if folder is not None else self._folders.all()
        return [Path(p) for f in folders for p in f.workspace.documents.paths()
                if self._folders.for_path(Path(p), create=False) is f]

    def buffers(self) -> dict[Path, str]:
        """Every open buffer's text."""
        out = {}
        for folder in self._folders.all():
            for key in folder.workspace.documents.paths():
                text = folder.workspace.documents.text(key)
                if text is not None:
                    out[Path(key)] = text
        return out


class ServerContext:
    """What the handlers share (see the module docstring). ``diagnostics``, ``progress`` and
    ``notebooks`` (the open notebooks and their cells) are set once their features are made."""

    diagnostics: DiagnosticsFeature
    progress: ProgressFeature
    notebooks: NotebookFeature

    def __init__(self, client: Client, folders: Folders) -> None:
        self.client = client
        self.folders = folders
        self.documents = Documents(folders)
        self.encoder = PositionEncoder("utf-16")
        self.capabilities: types.ClientCapabilities | None = None
        self.options = ServerOptions()
        self.folder_options: dict[str, ServerOptions] = {}
        self.shut_down = False
        self.initialized = False  # the client sent ``initialized``: the event loop runs
        self.started: set[Path] = set()  # folders whose checking was started
        self.ready: set[Path] = set()  # folders whose start-up round is scheduled
        self._lens_refresh_pending = False

    def options_for(self, folder: Folder) -> ServerOptions:
        """The settings of ``folder`` (its own, else the server's)."""
        return self.folder_options.get(folder.uri, self.options)

    def settings(self, opts: ServerOptions) -> SessionSettings:
        """The session settings that ``opts`` give."""
        debounce = opts.debounce_ms / 1000 if opts.debounce_ms is not None else DEFAULT_DEBOUNCE_S
        return SessionSettings(debounce_s=debounce, trace_on=opts.trace_on, workers=opts.workers,
                               timeout=opts.timeout, enabled=opts.enable)

    def busy(self, folder: Folder, path: Path) -> bool:
        """A trace that may change ``path``'s results is debouncing, queued or running (or the
        folder's start-up check has not been scheduled yet)."""
        if folder.root not in self.ready:
            return True
        try:
            return folder.workspace.is_pending(path)
        except Exception:  # noqa: BLE001 - a closing workspace is not busy
            return False

    def python_path(self, folder: Folder) -> list[Path]:
        """The folder's ``python-path`` (where its modules are importable from)."""
        return list(folder.workspace.config.python_path)

    def refresh_lenses(self) -> None:
        """Ask the client to re-request code lenses and inlay hints (coalesced; on the loop)."""
        ws = self.capabilities.workspace if self.capabilities else None
        lens = bool(ws and ws.code_lens and ws.code_lens.refresh_support)
        hints = bool(ws and ws.inlay_hint and ws.inlay_hint.refresh_support) and self.options.inlay_hints
        if not (lens or hints) or self._lens_refresh_pending:
            return
        self._lens_refresh_pending = True

        def send() -> None:
            self._lens_refresh_pending = False
            if self.shut_down:
                return
            if lens:
                self.client.refresh_code_lens()
            if hints:
                self.client.refresh_inlay_hints()

        self.client.call_later(0.2, send)
