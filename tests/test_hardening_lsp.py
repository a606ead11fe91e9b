"""The fault zoo through the language server: diagnostics for every model (the healthy ones exactly
right), the server keeps answering, and after shutdown no process of the session remains, not
even those the models forked or escaped with ``setsid``."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

TESTS = Path(__file__).resolve().parent
sys.path[:0] = [str(TESTS / "lsp"), str(TESTS / "faults")]

from lsp_support import SERVER, VSCODE, initialize, make_client, uri, wait_until  # noqa: E402
from procs import alive  # noqa: E402
from zoo import EXPECTED, leftover_pids, write_zoo  # noqa: E402

from engine_support import new_marker, processes_with_marker  # noqa: E402

MARKER = new_marker()
_ENV = {**os.environ, "PYTHONUNBUFFERED": "1", "FXSCOPE_TEST_MARKER": MARKER}

pytestmark = pytest.mark.slow


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
