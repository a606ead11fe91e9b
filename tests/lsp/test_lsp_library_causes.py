"""Failures inside an installed library (einops, from the project's environment, outside the
workspace) in the editor: one diagnostic per cause and file at the user's lines, the other lines as
capped related information, nothing published for the library's files; the quick fix the hint
recommends first and preferred, no duplicate actions; one workspace-level action that applies the
library's settings and clears the errors once the re-trace ran; hovers of bounded size."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import (VSCODE, apply_edits, initialize, make_workspace, marker_line, open_doc, uri,
                         wait_startup, wait_until, workspace_edit_files)

pytestmark = pytest.mark.requires_torch

einops = pytest.importorskip("einops")

HEADS = '''import torch
from einops import rearrange
from torch import nn


class Split(nn.Module):
    def forward(self, x):
        return rearrange(x, "b n (h d) -> b h n d", h=2)  # SITE split


class Merge(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return rearrange(self.proj(x), "b n d -> b d n")  # SITE merge


class Both(nn.Module):
    def __init__(self):
        super().__init__()
        self.split = Split()
        self.merge = Merge()

    def forward(self, x):
        return self.split(x), self.merge(x)


class Many(nn.Module):
    def __init__(self):
        super().__init__()
        self.parts = nn.ModuleList(Split() for _ in range(12))

    def forward(self, x):
        return [part(x) for part in self.parts]
'''

OTHER = '''import torch
from einops import rearrange
from torch import nn


class Flip(nn.Module):
    def forward(self, x):
        return rearrange(x, "b n d -> b d n")  # SITE flip
'''

#: A class whose lines run in many module instances of many targets: its hover must stay bounded.
WIDE = '''import torch
from torch import nn


class Cell(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)) + x * 2 - 1).tanh().sigmoid()  # WIDE line
''' + "".join(f'''

class Stack{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.cells = nn.ModuleList(Cell() for _ in range({10 + i}))

    def forward(self, x):
        for cell in self.cells:
            x = cell(x)
        return x
''' for i in range(8))


def _diags(client: LanguageClient, path: Path) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri(path), []) if d.source == "fxscope"]


async def _actions(client: LanguageClient, path: Path, diagnostic: types.Diagnostic) -> list[types.CodeAction]:
    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    return [a for a in got or [] if isinstance(a, types.CodeAction)]


async def test_one_diagnostic_per_library_cause_and_file(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], extra={"heads.py": HEADS, "other.py": OTHER},
                          pyproject='[project]\nname = "demo"\n')
    await initialize(client, [root], VSCODE)
    heads, other = root / "heads.py", root / "other.py"
    text = open_doc(client, heads)
    open_doc(client, other)
    await wait_startup(client)
    split, merge = marker_line(text, "SITE split") - 1, marker_line(text, "SITE merge") - 1
    await wait_until(lambda: _diags(client, heads) and _diags(client, other), what="the einops findings")

    # heads.py: two lines reach the same failure in einops: one diagnostic, at the first line
    (diag,) = _diags(client, heads)
    assert diag.code == "FXS107" and diag.range.start.line == split
    assert "the same cause on 1 more line of this file" in diag.message
    related = diag.related_information or []
    assert any(r.location.uri == uri(heads) and r.location.range.start.line == merge
               and "same cause" in r.message for r in related), [r.message for r in related]
    origin = [r for r in related if r.message.startswith("the failing code")]
    assert len(origin) == 1 and "site-packages" in origin[0].location.uri
    # the instances of both lines stay reachable; the list is capped (with a summary row)
    assert "\nin " in diag.message and " more\n" in diag.message
    assert any(r.message.startswith("also in ") and "more module instances" in r.message for r in related)
    assert len(related) <= 1 + 5 + 1 + 6 + 1 + 5 + 1, [r.message for r in related]
    # other.py: the same failure, its own file, its own diagnostic
    (flip,) = _diags(client, other)
    assert flip.range.start.line == marker_line(other.read_text(), "SITE flip") - 1
    # nothing is ever published for a file outside the workspace
    assert all(p.uri.startswith(uri(root)) for p in client.published), sorted({p.uri for p in client.published})

    # quick fixes: the hint's fix first and preferred, every title once
    actions = await _actions(client, heads, diag)
    titles = [a.title for a in actions]
    assert len(titles) == len(set(titles)), titles
    assert actions[0].is_preferred and "`einops:rearrange`" in actions[0].title, titles
    assert "wrap-functions = [\"einops:rearrange\"]" in diag.message
    library = next(a for a in actions if a.title.startswith("Apply fxscope's settings for einops"))
    assert not library.is_preferred

    # the one-step library action: pyproject.toml gets the documented settings, the rest is kept
    pyproject = root / "pyproject.toml"
    (edits,) = workspace_edit_files(library.edit).values()
    new_text = apply_edits(pyproject.read_text(), edits)
    data = tomllib.loads(new_text)
    assert data["project"]["name"] == "demo"
    assert "einops:rearrange" in data["tool"]["fxscope"]["wrap-functions"]
    assert "einops.layers.torch.Rearrange" in data["tool"]["fxscope"]["leaf-modules"]
    pyproject.write_text(new_text)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=uri(pyproject), type=types.FileChangeType.Changed)]))
    await wait_until(lambda: not _diags(client, heads) and not _diags(client, other),
                     what="the re-trace to clear the einops errors")
    # applied: the action is no longer offered
    assert not [a for a in await _actions(client, heads, diag) if a.title.startswith("Apply fxscope's settings")]


async def test_library_action_creates_the_table(client: LanguageClient, tmp_path):
    """A pyproject.toml without [tool.fxscope]: the action adds the table, keeping the rest."""
    root = make_workspace(tmp_path / "ws", [], extra={"other.py": OTHER},
                          pyproject='[build-system]\nrequires = ["setuptools"]\n')
    await initialize(client, [root], VSCODE)
    other = root / "other.py"
    open_doc(client, other)
    (diag,) = await wait_until(lambda: _diags(client, other), what="the einops finding")
    actions = await _actions(client, other, diag)
    library = next(a for a in actions if a.title.startswith("Apply fxscope's settings for einops"))
    (edits,) = workspace_edit_files(library.edit).values()
    before = (root / "pyproject.toml").read_text()
    after = apply_edits(before, edits)
    assert after.startswith(before) and after.endswith("]\n") and not after.endswith("\n\n")
    data = tomllib.loads(after)
    assert data["build-system"]["requires"] == ["setuptools"]
    assert set(data["tool"]["fxscope"]) == {"leaf-modules", "wrap-functions"}


async def test_hover_size_is_bounded(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], extra={"wide.py": WIDE})
    await initialize(client, [root], VSCODE)
    path = root / "wide.py"
    text = open_doc(client, path)
    await wait_startup(client)
    line0 = marker_line(text, "WIDE line") - 1
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)), position=types.Position(line=line0, character=12)))
    assert hover is not None
    value = hover.contents.value if isinstance(hover.contents, types.MarkupContent) else str(hover.contents)
    assert value.startswith("**fxscope** ·")
    # nine targets trace this line (Cell and Stack0..7, 100+ instances): a few are shown, the rest summarised
    assert value.count("\ntarget `") <= 3 and "more targets" in value, value
    assert len(value) <= 8000
    # the class hover lists a handful of instances and says how many there are
    cls_line = next(i for i, l in enumerate(text.split("\n")) if l.startswith("class Cell"))
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)), position=types.Position(line=cls_line, character=7)))
    assert hover is not None
    value = hover.contents.value if isinstance(hover.contents, types.MarkupContent) else str(hover.contents)
    assert " in all)" in value and len(value) <= 8000, value
