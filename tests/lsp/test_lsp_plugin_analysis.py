"""An analysis a workspace plug-in registers (``plugins`` in [tool.fxscope]) shows in the editor like
the built-in ones: the real server over stdio (pytest-lsp, VS Code's capabilities) puts its
summary, as the analysis words it, in the hover and the code lens of the class its target builds;
no line of fxscope's model, engine, report, session or lsp code names it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import VSCODE, initialize, make_workspace, open_doc, uri, wait_startup

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

PLUGIN = Path(__file__).resolve().parents[1] / "models" / "plugins" / "fxs_params.py"

PYPROJECT = """[tool.fxscope]
timeout = 120
auto-targets = false
plugins = ["fxs_params"]

[tool.fxscope.analysis.params]
limit = 10

[tool.fxscope.targets.net]
factory = "net:Net"
inputs = { x = [2, 4] }
analyses = ["fx", "params"]
"""

MODEL = '''from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()
'''


async def test_a_plugin_analysis_summary_is_in_the_hover_and_the_lens(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT,
                          extra={"net.py": MODEL, "fxs_params.py": PLUGIN.read_text(encoding="utf-8")})
    await initialize(client, [root], VSCODE)
    path = root / "net.py"
    text = open_doc(client, path)
    await wait_startup(client)
    line0 = next(i for i, line in enumerate(text.split("\n")) if line.startswith("class Net"))
    expected = "params [net] not ok: 20 parameters (limit 10)"

    async def hover_text() -> str:
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path)),
            position=types.Position(line=line0, character=len("class N"))))
        return hover.contents.value if hover is not None else ""

    value = await hover_text()
    for _ in range(600):  # the first result needs the worker: torch's import, the build, fx and the plug-in
        if expected in value:
            break
        await asyncio.sleep(0.5)
        value = await hover_text()
    assert f"- {expected}" in value, value
    assert value.startswith("**Net**") and "`net` (traced)" in value, value
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    titles = [lens.command.title for lens in lenses if lens.command is not None and lens.range.start.line == line0]
    assert any(title.endswith("· params [net]: 20 parameters (limit 10)") for title in titles), titles
