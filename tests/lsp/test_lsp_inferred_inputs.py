"""Inferred example inputs in the editor: with ``analyses = ["fx", "compile", "export"]`` a real
server (pytest-lsp, VS Code's capabilities) runs torch.compile and torch.export on a class whose
inputs a test shows, publishes their findings next to fx's, says the inputs and where they came
from in the class's code lens and hover, gives a class without inputs one info diagnostic, and
re-runs the class when the test's call changes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import VSCODE, change_doc, initialize, make_workspace, marker_line, open_doc, uri, wait_until
from pt2_support import ENCODER_MODULE

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

PYPROJECT = """[tool.fxscope]
timeout = 240
analyses = ["fx", "compile", "export"]
"""

MODELS = ENCODER_MODULE + '''

class Pair(nn.Module):
    def forward(self, a, b, c):  # PAIR
        return a @ b + c
'''

TEST = '''import torch
from models import Encoder


def test_encoder():
    enc = Encoder(3, 4)
    enc(torch.randn(2, 3, 8, 8))  # CALL
'''


async def _lens(client: LanguageClient, path: Path) -> dict[int, str]:
    got = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    return {lens.range.start.line: lens.command.title for lens in got or [] if lens.command is not None}


async def _lens_until(client: LanguageClient, path: Path, line0: int, wanted: str, timeout: float = 300) -> str:
    title = ""
    for _ in range(int(timeout / 0.2)):
        title = (await _lens(client, path)).get(line0, "")
        if wanted in title:
            return title
        await asyncio.sleep(0.2)
    raise AssertionError(f"lens never said {wanted!r}: {title!r}")


async def test_inferred_inputs_drive_compile_and_export_in_the_editor(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT,
                          extra={"models.py": MODELS, "tests/test_models.py": TEST})
    await initialize(client, [root], VSCODE)
    path, test_path = root / "models.py", root / "tests" / "test_models.py"
    text = open_doc(client, path, version=1)
    branch = marker_line(text, "BRANCH")
    call = marker_line(TEST, "CALL")

    def by_code() -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for d in client.diagnostics.get(uri(path), []):
            out.setdefault(str(d.code), set()).add(d.range.start.line + 1)
        return out

    got = await wait_until(lambda: {"FXS101", "FXS601", "FXS701"} <= set(by_code()) and by_code(),
                           timeout=300, what="fx, compile and export findings of the class")
    assert got["FXS101"] == got["FXS601"] == got["FXS701"] == {branch}
    pair_line = marker_line(text, "PAIR") - 1  # the class line
    info = await wait_until(lambda: [d for d in client.diagnostics.get(uri(path), []) if d.code == "FXS409"],
                            timeout=300, what="the no-inputs info diagnostic of Pair")
    assert len(info) == 1 and info[0].range.start.line + 1 == pair_line
    assert info[0].severity == types.DiagnosticSeverity.Information and "forward(a, b, c)" in info[0].message

    line0 = MODELS.split("\n").index("class Encoder(nn.Module):")
    title = await _lens_until(client, path, line0, "inputs (2, 3, 8, 8)")
    assert title.endswith(f" · inputs (2, 3, 8, 8) as in tests/test_models.py:{call}"), title
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line0, character=len("class E"))))
    assert hover is not None
    assert f"compile and export ran on inputs (2, 3, 8, 8) as in tests/test_models.py:{call}" in hover.contents.value

    # the test's call changes in the editor: the class runs again on the new inputs
    test_text = open_doc(client, test_path, version=1)
    change_doc(client, test_path, 2, test_text.replace("torch.randn(2, 3, 8, 8)", "torch.randn(2, 3, 6, 6)"))
    title = await _lens_until(client, path, line0, "inputs (2, 3, 6, 6)")
    assert title.endswith(f"as in tests/test_models.py:{call}"), title
