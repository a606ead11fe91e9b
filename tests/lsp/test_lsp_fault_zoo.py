"""The fault zoo through the language server: diagnostics for every model (the healthy ones exactly
right), the server keeps answering, and after shutdown no process of the session remains, not
even those the models forked or escaped with ``setsid``."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS / "lsp"), str(TESTS / "faults")]

from lsp_support import SERVER, VSCODE, initialize, make_client, uri, wait_startup, wait_until  # noqa: E402
from procs import alive  # noqa: E402
from zoo import EXPECTED, leftover_pids, write_zoo  # noqa: E402

from engine_support import new_marker, processes_with_marker  # noqa: E402

MARKER = new_marker()
_ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "FXSCOPE_TEST_MARKER": MARKER}

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, client_factory=make_client, server_env=_ENV))
async def client(lsp_client: LanguageClient):
    yield
    try:
        await lsp_client.shutdown_session()
    except Exception:  # noqa: BLE001 - the test may have shut it down already
        pass


def _codes(client: LanguageClient, path: Path) -> list[str]:
    return sorted(str(d.code) for d in client.diagnostics.get(uri(path), []))


async def test_fault_zoo_through_the_language_server(client: LanguageClient, tmp_path):
    root, scratch = tmp_path / "ws", tmp_path / "pids"
    write_zoo(root, scratch)
    await initialize(client, [root], VSCODE)
    with_findings = {tid.split("::")[0]: code for tid, (_, code, _) in EXPECTED.items() if code}

    def all_published() -> bool:
        return all(code in _codes(client, root / rel) for rel, code in with_findings.items())

    await wait_until(all_published, timeout=300, what="diagnostics of every faulty model")
    await wait_startup(client, timeout=300)  # the healthy models too: their empty lists are final
    for tid, (_, code, text) in EXPECTED.items():
        rel = tid.split("::")[0]
        diagnostics = client.diagnostics.get(uri(root / rel), [])
        if code is None:
            assert diagnostics == [] or rel == "healthy.py", (rel, diagnostics)
        elif rel != "healthy.py":
            assert [str(d.code) for d in diagnostics] == [code], (rel, diagnostics)
            assert text in diagnostics[0].message, (rel, diagnostics[0].message)
    (branch,) = client.diagnostics[uri(root / "healthy.py")]
    assert str(branch.code) == "FXS101" and branch.range.start.line + 1 == 16
    # the server still answers
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(root / "healthy.py")),
        position=types.Position(line=10, character=30)))
    assert hover is not None

    left = leftover_pids(scratch)
    await wait_until(lambda: not [p for p in left if alive(p)], timeout=30,
                     what="the processes the models left behind to be killed")
    await client.shutdown_session()

    def gone() -> bool:
        return not processes_with_marker(MARKER)

    try:
        await wait_until(gone, timeout=30, what="every process of the session to exit")
    finally:
        for pid, _ in processes_with_marker(MARKER):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass


EVIL = """open({marker!r}, "w").write("imported")
from torch import nn


class Evil(nn.Module):
    def forward(self, x):
        return x
"""

SLOW = """import time

from torch import nn


class Slow(nn.Module):
    def forward(self, x):
        time.sleep(3)
        return x
"""


async def test_documents_outside_the_workspace_or_deleted_while_traced(client: LanguageClient, tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "outside"
    marker = tmp_path / "imported.txt"
    root.mkdir()
    outside.mkdir()
    (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 30\n")
    (root / "slow.py").write_text(SLOW)
    (outside / "evil.py").write_text(EVIL.format(marker=str(marker)))
    (root / "link.py").symlink_to(outside / "evil.py")
    await initialize(client, [root], VSCODE)
    for path in (outside / "evil.py", root / "link.py"):  # opened in the editor: still never run
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=uri(path), language_id="python", version=1, text=path.read_text())))
    slow = root / "slow.py"
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri(slow), language_id="python", version=1, text=SLOW)))
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(slow), version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=SLOW.replace("3)", "2)"))]))
    slow.unlink()  # deleted (and closed) while it is being traced
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri(slow))))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=uri(slow), type=types.FileChangeType.Deleted)]))

    async def idle() -> bool:
        status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
        folder = status["folders"][0]
        return folder["running"] == 0 and folder["queued"] == 0

    # what the deletion leaves is known once the start-up check and the edit's re-run are over
    await wait_startup(client, timeout=120)
    deadline = time.monotonic() + 120
    while not await idle():
        assert time.monotonic() < deadline, "the folder never went idle"
        await asyncio.sleep(0.1)
    assert not client.diagnostics.get(uri(slow)), "diagnostics for the deleted document"
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(outside / "evil.py")),
        position=types.Position(line=5, character=8)))
    assert hover is None
    assert not marker.exists(), "a file whose real path is outside the workspace was imported"
    assert not any(str(d.code) != "FXS402" for d in client.diagnostics.get(uri(root / "link.py"), []))
