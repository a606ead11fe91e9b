"""The compile and export analyses in the language server: a real server over stdio (pytest-lsp,
VS Code's capabilities) publishes their findings for an open file and updates them after an edit,
from the warm worker."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import VSCODE, change_doc, initialize, make_workspace, marker_line, open_doc, uri, wait_until

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

PYPROJECT = """[tool.fxscope]
timeout = 120
auto-targets = false
compile-dynamic = true

[tool.fxscope.targets.net]
factory = "net:Net"
inputs = { x = [2, 4] }
analyses = ["fx", "compile", "export"]
"""

MODEL = '''import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:  # BRANCH
            y = y * 2
        print("step")  # PRINT
        return y + 1
'''


def _by_code(client: LanguageClient, path) -> dict[str, set[int]]:
    out: dict[str, set[int]] = {}
    for d in client.diagnostics.get(uri(path), []):
        out.setdefault(str(d.code), set()).add(d.range.start.line + 1)
    return out


async def test_compile_and_export_findings_are_published_and_follow_edits(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT, extra={"net.py": MODEL})
    await initialize(client, [root], VSCODE)
    path = root / "net.py"
    text = open_doc(client, path, version=1)
    branch, printed = marker_line(text, "BRANCH"), marker_line(text, "PRINT")

    def first():
        got = _by_code(client, path)
        return got.get("FXS601") == {branch, printed} and got.get("FXS701") == {branch} and got

    got = await wait_until(first, timeout=300, what="the compile and export findings")
    assert got.get("FXS101") == {branch}  # fx's own finding stays
    diagnostics = {str(d.code): d for d in client.diagnostics[uri(path)]}
    for code, anchor in (("FXS601", "#the-compile-analysis"), ("FXS701", "#the-export-analysis")):
        d = diagnostics[code]
        assert d.source == "fxscope" and d.code_description is not None
        assert d.code_description.href.endswith(anchor)
    assert diagnostics["FXS601"].severity == types.DiagnosticSeverity.Warning
    assert diagnostics["FXS701"].severity == types.DiagnosticSeverity.Error
    assert "hint:" in diagnostics["FXS601"].message and "hint:" in diagnostics["FXS701"].message

    # the print goes away, the branch becomes branchless: its breaks and the export failure go
    fixed = text.replace('        print("step")  # PRINT\n', "").replace(
        "        if y.sum() > 0:  # BRANCH\n            y = y * 2\n",
        "        y = torch.where(y.sum() > 0, y * 2, y)  # WHERE\n")
    change_doc(client, path, 2, fixed)

    def updated():
        pubs = [p for p in client.published if p.uri == uri(path)]
        if not pubs or pubs[-1].version != 2:
            return False
        return not {str(d.code) for d in pubs[-1].diagnostics} & {"FXS601", "FXS701", "FXS101"}

    await wait_until(updated, timeout=300, what="the findings of the edited file")

    # a new break, typed in: it is published at its line
    broken = fixed.replace("        return y + 1\n", "        n = y.sum().item()  # ITEM\n        return y + n\n")
    change_doc(client, path, 3, broken)
    item = marker_line(broken, "ITEM")

    def broken_again():
        pubs = [p for p in client.published if p.uri == uri(path)]
        return pubs and pubs[-1].version == 3 and any(
            d.code == "FXS601" and d.range.start.line + 1 == item for d in pubs[-1].diagnostics)

    await wait_until(broken_again, timeout=300, what="the new graph break")
