"""The code-lens setting applies at once: turning it on in the client asks the client to
re-request lenses (workspace/codeLens/refresh), and the lenses are there."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import initialize, make_workspace, open_doc, uri, wait_startup, wait_until

pytestmark = pytest.mark.requires_torch


async def test_turning_code_lenses_on_refreshes_them(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["clean.py"])
    caps = types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=True),
        workspace=types.WorkspaceClientCapabilities(code_lens=types.CodeLensWorkspaceClientCapabilities(
            refresh_support=True)))
    await initialize(client, [root], caps, options={"codeLens": False})
    path = root / "clean.py"
    open_doc(client, path)
    await wait_startup(client)

    async def lenses() -> list[types.CodeLens]:
        return await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)))) or []

    assert await lenses() == []
    before = client.lens_refreshes  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fxscope": {"codeLens": True}}))
    await wait_until(lambda: client.lens_refreshes > before, what="a code lens refresh")  # type: ignore[attr-defined]
    got = await lenses()
    assert got and got[0].command and got[0].command.command == "fxscope.showGraph"
