"""The server's lifecycle: ``initialize`` (settings, position encoding, folders), ``initialized``
(client settings, file watching, every folder started), ``shutdown`` and ``exit`` (every
workspace closed: no trace process is left)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope import __version__
from fxscope.lsp.configuration import apply_configuration
from fxscope.lsp.context import ServerContext
from fxscope.lsp.folders import FolderFeature
from fxscope.lsp.options import parse_options
from fxscope.lsp.positions import PositionEncoder, negotiate
from fxscope.lsp.watch import WATCH_GLOBS
from fxscope.lsp.workspaces import path_to_uri, uri_to_path

__all__ = ["Host", "register"]

log = logging.getLogger("fxscope.lsp")


class Host(Protocol):
    """What the lifecycle asks of the server process itself."""

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """The event loop runs: events from other threads may be posted to it now."""

    def exit_process(self) -> None:
        """``exit`` on a transport that must end the process here (TCP)."""


def _roots(params: types.InitializeParams) -> list[tuple[Path, str, str]]:
    """(path, name, uri) of every workspace folder, else of the root URI or path."""
    roots: list[tuple[Path, str, str]] = []
    for f in params.workspace_folders or ():
        path = uri_to_path(f.uri)
        if path is not None:
            roots.append((path, f.name, f.uri))
    if not roots:
        root_uri = params.root_uri or (path_to_uri(Path(params.root_path)) if params.root_path else None)
        path = uri_to_path(root_uri) if root_uri else None
        if path is not None and root_uri is not None:
            roots.append((path, path.name, root_uri))
    return roots


async def _watch_files(ctx: ServerContext) -> None:
    """Ask the client to report changes of Python files and pyproject.toml, when it can."""
    caps = ctx.capabilities
    watched = caps.workspace.did_change_watched_files if caps and caps.workspace else None
    if watched is None or not watched.dynamic_registration:
        return
    opts = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[types.FileSystemWatcher(glob_pattern=g) for g in WATCH_GLOBS])
    try:
        await ctx.client.register_capability(types.RegistrationParams(registrations=[
            types.Registration(id="fxscope-watched-files", method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                               register_options=opts)]))
    except Exception as e:  # noqa: BLE001 - the client refused: the server's own watcher stays
        log.info("could not register file watching with the client: %s", e)


def register(ls: LanguageServer, ctx: ServerContext, host: Host, folders: FolderFeature,
             is_tcp: Callable[[], bool]) -> None:
    """Register the lifecycle messages."""
    warn = lambda m: log.warning("%s", m)  # noqa: E731

    @ls.feature(types.INITIALIZE)
    def initialize(params: types.InitializeParams) -> None:
        ctx.options = parse_options(params.initialization_options, warn)
        ctx.capabilities = params.capabilities
        general = params.capabilities.general if params.capabilities else None
        ctx.encoder = PositionEncoder(negotiate(general.position_encodings if general else None))
        for path, name, uri in _roots(params):
            if path.is_dir():
                ctx.folders.add(path, name, uri)

    @ls.feature(types.INITIALIZED)
    async def initialized(params: types.InitializedParams) -> None:
        host.attach(asyncio.get_running_loop())
        ctx.initialized = True
        ctx.client.apply_log_level(ctx.options.log_level)
        await apply_configuration(ctx, ctx.folders.all())
        await _watch_files(ctx)
        for folder in ctx.folders.all():
            folders.start(folder)
        log.info("fxscope %s serving %d folder(s), %s positions, %s diagnostics", __version__,
                 len(ctx.folders.all()), ctx.encoder.encoding, "pull" if ctx.diagnostics.pull else "push")

    @ls.feature(types.SHUTDOWN)
    def shutdown(params: Any) -> None:
        ctx.shut_down = True
        ctx.progress.close()
        folders.close_all()

    @ls.feature(types.EXIT)
    def exit_(params: Any) -> None:
        ctx.shut_down = True
        folders.close_all()
        if is_tcp():  # pygls would raise SystemExit inside the connection callback: end here
            host.exit_process()
