"""Edits made while the start-up check is still running end in the diagnostics of the final
text: a document opened and edited into a syntax error mid start-up keeps the results of its last
text that parsed, pushed and pulled, whatever the moment of the edit, and never gets an FXS402
(the editor shows that syntax error itself)."""

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


async def _idle(client: LanguageClient) -> None:
    for _ in range(1200):
        status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
        if status["folders"][0]["running"] == 0 and status["folders"][0]["queued"] == 0:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the folder never went idle")


async def _lens_lines(client: LanguageClient, path) -> list[int]:
    got = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    return sorted(lens.range.start.line + 1 for lens in got or ())


@pytest.mark.parametrize("delay", [0.0, 0.5, 1.5])
async def test_edit_into_a_syntax_error_during_the_startup_check(client: LanguageClient, tmp_path, delay):
    """The start-up trace of the edited file's own target is running when the edits kill it; the
    breaking edit comes inside the debounce of the one before: the text that parsed is traced,
    the broken one never is."""
    root = make_workspace(tmp_path / "ws", [], extra={"m.py": SLOW_MODEL})
    await initialize(client, [root], VSCODE, options={"debounce": 600})
    path = root / "m.py"
    broken, line = _broken(SLOW_MODEL)
    await asyncio.sleep(delay)
    open_doc(client, path, version=1)
    change_doc(client, path, 2, SLOW_MODEL + "# typing\n")  # a burst: the next edit is debounced
    change_doc(client, path, 3, broken)
    assert not _startup_over(client)  # the edits landed inside the start-up check

    await wait_startup(client)
    await _idle(client)
    pubs = [p for p in client.published if p.uri == uri(path)]
    assert not any(_fxs402(p.diagnostics) for p in pubs)
    assert await _pull(client, path) == []
    class_line = next(i for i, l in enumerate(broken.split("\n"), 1) if l.startswith("class Clean"))
    assert await _lens_lines(client, path) == [class_line]  # the class keeps its results


async def test_edit_into_a_syntax_error_after_startup(client: LanguageClient, tmp_path):
    """A clean file broken when nothing else runs: nothing is traced, and nothing is pushed
    (its results did not move)."""
    root = make_workspace(tmp_path / "ws", [], extra={"m.py": MODEL})
    await initialize(client, [root], VSCODE)
    path = root / "m.py"
    broken, line = _broken(MODEL)
    await wait_startup(client)
    open_doc(client, path, version=1)
    await wait_until(lambda: any(p.uri == uri(path) for p in client.published), what="the first diagnostics")
    change_doc(client, path, 2, broken)
    await _idle(client)
    assert await _pull(client, path) == []
    assert not any(_fxs402(p.diagnostics) for p in client.published if p.uri == uri(path))
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    assert status["folders"][0]["generation"] >= 2


async def test_findings_asked_for_while_an_edit_debounces_are_not_kept_after_it(client: LanguageClient, tmp_path):
    """A pull answered between the edit and its re-discovery is not memoised past it; a buffer
    that does not parse is never pulled with an FXS402."""
    root = make_workspace(tmp_path / "ws", [], extra={"m.py": MODEL})
    caps = capabilities(NEOVIM)  # pull, and told to refresh: a pull is answered at once
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    await initialize(client, [root], caps, options={"debounce": 1500})
    path = root / "m.py"
    await wait_startup(client)
    open_doc(client, path, version=1)
    assert await _pull(client, path) == []
    counted = MODEL.replace("return self.fc(x)", "return self.fc(x) if len(x) else x")
    change_doc(client, path, 2, MODEL + "# typing\n")  # a burst: the next edit is debounced
    change_doc(client, path, 3, counted)
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    assert not report.items  # answered inside the debounce, before the re-trace
    want = next(i for i, l in enumerate(counted.split("\n"), 1) if "len(x)" in l)

    async def fxs103() -> list[int]:
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path))))
        return [d.range.start.line + 1 for d in report.items if d.code == "FXS103"]

    deadline = asyncio.get_running_loop().time() + 60
    while not (lines := await fxs103()):
        assert asyncio.get_running_loop().time() < deadline, "FXS103 was never pulled"
        await asyncio.sleep(0.2)
    assert lines == [want]
    broken = counted.replace("    def forward(self, x):\n", "    def forward(self, x):\n        z = (\n")
    change_doc(client, path, 4, broken)
    assert await _pull(client, path) == [] and await fxs103() == [want + 1]  # kept and moved, no FXS402
