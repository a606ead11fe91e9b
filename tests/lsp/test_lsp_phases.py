"""fx first, compile and export after, over the real server (pytest-lsp, VS Code's capabilities):
with ``analyses = ["fx", "compile", "export"]`` and one worker, an opened file's fx diagnostics are
published before its compile/export findings, which are added later (fx's stay); the class's code
lens and hover then carry the analyses' summaries and the inputs they ran on. An edit while a
background class's analyses phase runs gets its fx diagnostics before that phase ends (the edit's
fx job preempts it), and the preempted phase is not lost: it runs again and its findings arrive.
Progress says how many targets' fx answered while their analyses run.

The background class sleeps on real tensors, so the order shows in which events come first,
never in timings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import VSCODE, change_doc, initialize, make_workspace, marker_line, open_doc, uri, wait_until
from pt2_support import ENCODER_MODULE

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

PYPROJECT = """[tool.fxscope]
timeout = 600
workers = 1
analyses = ["fx", "compile", "export"]
"""

MODELS = ENCODER_MODULE

EDITED = MODELS.replace("        return y\n", "        n = len(y)  # LEN\n        return y * n\n")

#: The background: its compile/export phase takes a while (it sleeps on real tensors, not on fx's
#: proxies), and torch.compile breaks its graph.
SLEEPY = '''import time

import torch
from torch import nn


class Sleepy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        if isinstance(x, torch.Tensor) and not isinstance(x, torch.fx.Proxy) and x.device.type == "cpu":
            time.sleep(2)
        y = self.fc(x)
        torch._dynamo.graph_break()  # BREAK
        return y + 1
'''

TEST = '''import torch
from models import Encoder


def test_encoder():
    enc = Encoder(3, 4)
    enc(torch.randn(2, 3, 8, 8))
'''


def _published(client: LanguageClient, path: Path) -> list[types.PublishDiagnosticsParams]:
    return [p for p in client.published if p.uri == uri(path)]


def _codes(params: types.PublishDiagnosticsParams) -> set[str]:
    return {str(d.code) for d in params.diagnostics}


async def _lens(client: LanguageClient, path: Path, line0: int) -> str:
    got = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    return next((lens.command.title for lens in got or [] if lens.range.start.line == line0 and lens.command), "")


async def test_fx_first_then_analyses_and_an_edit_preempts_them(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT,
                          extra={"models.py": MODELS, "zz_sleepy.py": SLEEPY, "tests/test_models.py": TEST})
    await initialize(client, [root], VSCODE)
    path, sleepy = root / "models.py", root / "zz_sleepy.py"
    text = open_doc(client, path, version=1)
    branch0 = marker_line(text, "BRANCH") - 1

    # fx's diagnostics first, alone; compile's and export's are added to them later
    first = await wait_until(lambda: next((p for p in _published(client, path) if "FXS101" in _codes(p)), None),
                             timeout=300, what="the fx diagnostics of the opened file")
    assert not {"FXS601", "FXS701"} & _codes(first), _codes(first)
    later = await wait_until(lambda: next((p for p in _published(client, path)
                                           if {"FXS601", "FXS701"} <= _codes(p)), None),
                             timeout=600, what="the compile and export findings of the opened file")
    assert "FXS101" in _codes(later)
    # fx's finding is in every publication since the first: never withdrawn while the analyses ran
    since = _published(client, path)[_published(client, path).index(first):]
    assert all("FXS101" in _codes(p) for p in since)
    assert all(d.range.start.line == branch0 for d in later.diagnostics if str(d.code) in ("FXS101", "FXS601"))

    line0 = MODELS.split("\n").index("class Encoder(nn.Module):")
    title = await _lens(client, path, line0)
    assert "compile: " in title and "export: " in title and "inputs (2, 3, 8, 8)" in title, title
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line0, character=len("class E"))))
    assert hover is not None and "compile and export ran on inputs (2, 3, 8, 8)" in hover.contents.value

    # the background class's fx phase answered before the opened file's analyses ran; its own
    # analyses phase (sleeping on real tensors) runs now on the only worker: edit meanwhile
    assert not any("FXS601" in _codes(p) for p in _published(client, sleepy))
    change_doc(client, path, 2, EDITED)
    edited = await wait_until(lambda: next((p for p in _published(client, path)
                                            if p.version == 2 and "FXS103" in _codes(p)), None),
                              timeout=300, what="the fx diagnostics of the edit")
    assert "FXS101" in _codes(edited)
    # the edit's fx answer did not wait for the background analyses phase it preempted
    assert not any("FXS601" in _codes(p) for p in _published(client, sleepy))
    # which runs again, and its finding arrives: preempted, never lost
    await wait_until(lambda: any("FXS601" in _codes(p) for p in _published(client, sleepy)), timeout=900,
                     what="the background class's compile finding")
    await wait_until(lambda: any(p.version == 2 and {"FXS103", "FXS601"} <= _codes(p)
                                 for p in _published(client, path)),
                     timeout=300, what="the analyses of the edited file")
    # progress said both phases: targets whose fx answered while their analyses ran
    messages = [v.message or "" for values in client.progress_reports.values() for v in values
                if isinstance(v, types.WorkDoneProgressReport)]
    assert any(re.search(r"\d+ of \d+ targets · fx \d+ of \d+, analyses running", m) for m in messages), messages
