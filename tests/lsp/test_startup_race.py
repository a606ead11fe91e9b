"""Edits made while the start-up check is still running end in the diagnostics of the final
text: a document opened and edited into a syntax error mid start-up gets its FXS402, pushed and
pulled, whatever the moment of the edit."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import (NEOVIM, VSCODE, capabilities, change_doc, initialize, make_workspace, open_doc, uri,
                         wait_startup, wait_until)

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODEL = """import torch
from torch import nn


class Clean(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
"""

#: The same model, slow to import: its start-up trace is still running seconds after initialize.
SLOW_MODEL = "import time\n\n" + MODEL.replace("\n\nclass Clean", "\ntime.sleep(2.5)\n\n\nclass Clean")


def _broken(text: str) -> tuple[str, int]:
    """``text`` with a parenthesis never closed, and the 1-based line Python reports it on."""
    lines = text.split("\n")
    line = next(i for i, l in enumerate(lines, 1) if l.strip() == "return self.fc(x)")
    lines[line - 1] = lines[line - 1].replace("self.fc(x)", "self.fc(x")
    broken = "\n".join(lines)
    try:
        compile(broken, "m.py", "exec")
    except SyntaxError as e:
        return broken, int(e.lineno or 0)
    raise AssertionError("the edit does not break the text")


def _fxs402(diags) -> list[int]:
    return [d.range.start.line + 1 for d in diags if d.code == "FXS402"]


async def _pull(client: LanguageClient, path) -> list[int]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    return _fxs402(report.items)


def _startup_over(client: LanguageClient) -> bool:
    return any(isinstance(v, types.WorkDoneProgressEnd) for values in client.progress_reports.values()
               for v in values)


@pytest.mark.parametrize("delay", [0.0, 0.5, 1.5])
async def test_edit_into_a_syntax_error_during_the_startup_check(client: LanguageClient, tmp_path, delay):
    """The start-up trace of the edited file's own target is running when the edits kill it; the
    debounce of the breaking edit is long enough for that round's end to be announced before the
    re-discovery."""
    root = make_workspace(tmp_path / "ws", [], extra={"m.py": SLOW_MODEL})
    await initialize(client, [root], VSCODE, options={"debounce": 600})
    path = root / "m.py"
    broken, line = _broken(SLOW_MODEL)
    await asyncio.sleep(delay)
    open_doc(client, path, version=1)
    change_doc(client, path, 2, SLOW_MODEL + "# typing\n")  # a burst: the next edit is debounced
    change_doc(client, path, 3, broken)
    assert not _startup_over(client)  # the edits landed inside the start-up check

    def broken_published():
        pubs = [p for p in client.published if p.uri == uri(path)]
        return pubs and pubs[-1].version == 3 and _fxs402(pubs[-1].diagnostics)

    await wait_startup(client)
    await wait_until(broken_published, timeout=60, what="FXS402 published for version 3")
    pubs = [p for p in client.published if p.uri == uri(path)]
    assert _fxs402(pubs[-1].diagnostics) == [line]
    assert await _pull(client, path) == [line]


async def test_edit_into_a_syntax_error_after_startup(client: LanguageClient, tmp_path):
    """A clean file broken when nothing else runs: no trace follows (its class is gone), the
    parse error alone must be pushed."""
    root = make_workspace(tmp_path / "ws", [], extra={"m.py": MODEL})
    await initialize(client, [root], VSCODE)
    path = root / "m.py"
    broken, line = _broken(MODEL)
    await wait_startup(client)
    open_doc(client, path, version=1)
    await wait_until(lambda: any(p.uri == uri(path) for p in client.published), what="the first diagnostics")
    change_doc(client, path, 2, broken)

    def broken_published():
        pubs = [p for p in client.published if p.uri == uri(path)]
        return pubs and pubs[-1].version == 2 and _fxs402(pubs[-1].diagnostics) == [line]

    await wait_until(broken_published, timeout=30, what="FXS402 published for version 2")


async def test_findings_asked_for_while_an_edit_debounces_are_not_kept_after_it(client: LanguageClient, tmp_path):
    """A pull answered between the edit and its re-discovery is not memoised past it."""
    root = make_workspace(tmp_path / "ws", [], extra={"m.py": MODEL})
    caps = capabilities(NEOVIM)  # pull, and told to refresh: a pull is answered at once
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    await initialize(client, [root], caps, options={"debounce": 1500})
    path = root / "m.py"
    broken, line = _broken(MODEL)
    await wait_startup(client)
    open_doc(client, path, version=1)
    assert await _pull(client, path) == []
    change_doc(client, path, 2, MODEL + "# typing\n")  # a burst: the next edit is debounced
    change_doc(client, path, 3, broken)
    await _pull(client, path)  # answered inside the debounce, before the parse error is known
    deadline = asyncio.get_running_loop().time() + 30
    while not (lines := await _pull(client, path)):
        assert asyncio.get_running_loop().time() < deadline, "FXS402 was never pulled"
        await asyncio.sleep(0.2)
    assert lines == [line]
