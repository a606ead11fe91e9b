"""Settings from the client: ``workspace/configuration`` per folder (and globally) when the client
offers it, else ``workspace/didChangeConfiguration``'s payload; each folder's session gets the
settings merged over the server's."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fxscope.lsp.context import ServerContext
from fxscope.lsp.options import SECTION, ServerOptions, parse_options
from fxscope.lsp.workspaces import Folder

__all__ = ["apply_configuration", "register"]

log = logging.getLogger("fxscope.lsp")


def _warn(message: str) -> None:
    log.warning("%s", message)


async def _configuration(ctx: ServerContext, folders: Sequence[Folder]) -> list[ServerOptions] | None:
    """Settings per folder, then the global ones, from ``workspace/configuration`` (None when the
    client has none)."""
    caps = ctx.capabilities
    if not (caps and caps.workspace and caps.workspace.configuration):
        return None
    items = [types.ConfigurationItem(scope_uri=f.uri, section=SECTION) for f in folders]
    items.append(types.ConfigurationItem(section=SECTION))
    try:
        answer = await asyncio.wait_for(ctx.client.configuration(types.ConfigurationParams(items=items)), timeout=5)
    except Exception as e:  # noqa: BLE001 - the client failed the request: the initialization options stay
        log.info("workspace/configuration failed: %s", e)
        return None
    if not isinstance(answer, list) or len(answer) != len(items):
        return None
    return [parse_options(a, _warn) for a in answer]


def _apply(ctx: ServerContext, folder: Folder, opts: ServerOptions) -> None:
    ctx.folder_options[folder.uri] = opts
    try:
        folder.workspace.update_settings(ctx.settings(opts))
    except Exception:
        log.exception("applying the settings of %s failed", folder.root)


async def apply_configuration(ctx: ServerContext, folders: Sequence[Folder]) -> None:
    """Ask the client for the settings of ``folders`` and apply them."""
    opts = await _configuration(ctx, folders)
    if opts is None:
        return
    *per_folder, global_opts = opts
    ctx.options = ctx.options.merged(global_opts)
    ctx.client.apply_log_level(ctx.options.log_level)
    for folder, o in zip(folders, per_folder):
        new = ctx.options.merged(o)
        if new != ctx.folder_options.get(folder.uri):
            _apply(ctx, folder, new)


def register(ls: LanguageServer, ctx: ServerContext) -> None:
    """Register ``workspace/didChangeConfiguration``."""

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(params: types.DidChangeConfigurationParams) -> None:
        caps = ctx.capabilities
        if caps and caps.workspace and caps.workspace.configuration:
            await apply_configuration(ctx, ctx.folders.all())
        else:
            ctx.options = ctx.options.merged(parse_options(params.settings, _warn))
            ctx.client.apply_log_level(ctx.options.log_level)
            for folder in ctx.folders.all():
                _apply(ctx, folder, ctx.options)
        _refresh_views(ctx)


def _refresh_views(ctx: ServerContext) -> None:
    """The code-lens and inlay-hint settings apply at once: the client re-requests both (hints
    also when they were just turned off, so that the shown ones go away)."""
    ctx.refresh_lenses()
    ws = ctx.capabilities.workspace if ctx.capabilities else None
    if ws and ws.inlay_hint and ws.inlay_hint.refresh_support and not ctx.options.inlay_hints:
        ctx.client.refresh_inlay_hints()
