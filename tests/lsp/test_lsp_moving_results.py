"""Results follow the edits of the real server's documents until new ones arrive, and a buffer that
does not parse keeps its last results.

The model's forward waits while a file named ``hold`` exists next to it: the tests create it
before an edit, so the edit's re-trace cannot deliver, and check what the editor is shown in
between; removing it lets the results land."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import (NEOVIM, VSCODE, capabilities, change_doc, initialize, make_workspace, open_doc, uri,
                         wait_startup, wait_until)

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODEL = '''import os
import time

import torch
from torch import nn

HOLD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hold")


def hold():
    while os.path.exists(HOLD):  # the test holds the trace here
        time.sleep(0.05)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        hold()
        y = self.fc(x)
        if y.sum() > 0:
            y = y + 1
        return y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        hold()
        return self.block(x) * 2
'''

#: Another file that imports the model: its results must not turn into FXS402 while it is half-typed.
USER = '''from torch import nn

from m import Block


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Block()
        self.b = Block()

    def forward(self, x):
        return self.b(self.a(x))
'''

PYPROJECT = "[tool.fxscope]\ntimeout = 300\n"


def _line(text: str, needle: str) -> int:
    """0-based line of the only line of ``text`` that contains ``needle``."""
    (found,) = [i for i, line in enumerate(text.split("\n")) if needle in line]
    return found


def _insert(line: int, text: str) -> types.TextDocumentContentChangePartial:
    at = types.Position(line=line, character=0)
    return types.TextDocumentContentChangePartial(range=types.Range(start=at, end=at), text=text)


def _edit(client: LanguageClient, path: Path, version: int, *changes: types.TextDocumentContentChangePartial) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=version),
        content_changes=list(changes)))


async def _lenses(client: LanguageClient, path: Path) -> dict[int, str]:
    got = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    return {lens.range.start.line: lens.command.title for lens in got or ()}


async def _hints(client: LanguageClient, path: Path, lines: int) -> dict[int, str]:
    got = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=lines, character=0))))
    return {hint.position.line: str(hint.label) for hint in got or ()}


async def _hover(client: LanguageClient, path: Path, line: int, character: int = 10) -> str | None:
    got = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)), position=types.Position(line=line, character=character)))
    return got.contents.value if got is not None else None


def _pushed(client: LanguageClient, path: Path, version: int) -> list[types.Diagnostic] | None:
    """The last diagnostics pushed for ``path``, when they are for ``version``."""
    pubs = [p for p in client.published if p.uri == uri(path)]
    return list(pubs[-1].diagnostics) if pubs and pubs[-1].version == version else None


async def _graph(client: LanguageClient, target: str) -> dict:
    """The graph document ``fxscope.showGraph`` returns for ``target`` (what the graph view draws)."""
    got = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxscope.showGraph", arguments=[target, None, None]))
    return got["graph"]


def _at(diagnostics: list[types.Diagnostic] | None, code: str) -> list[int]:
    return sorted(d.range.start.line for d in diagnostics or () if d.code == code)


async def _status(client: LanguageClient) -> dict:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))


def _no_fxs402(client: LanguageClient) -> bool:
    return not any(d.code == "FXS402" for p in client.published for d in p.diagnostics)


async def test_results_follow_inserted_lines_until_new_ones_arrive(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT, extra={"m.py": MODEL})
    await initialize(client, [root], VSCODE, options={"inlayHints": True})
    path = root / "m.py"
    text = open_doc(client, path)
    await wait_startup(client)
    if_line, ret_line = _line(text, "if y.sum() > 0:"), _line(text, "return self.block(x) * 2")
    block, net = _line(text, "class Block"), _line(text, "class Net")
    await wait_until(lambda: _at(_pushed(client, path, 1), "FXS101") == [if_line], what="the first diagnostics")
    assert set(await _lenses(client, path)) == {block, net}
    assert "graph node" in (await _hover(client, path, ret_line) or "")

    (root / "hold").touch()  # the edit's re-trace cannot deliver until it is removed
    # two lines above a class, and a code line above Net's `return` (lines after the first change)
    _edit(client, path, 2, _insert(block, "# one\n# two\n"), _insert(ret_line + 2, "        x = x * 3\n"))
    new_line, moved_ret = ret_line + 2, ret_line + 3

    # the diagnostics are pushed again at the moved lines, for the edited version
    await wait_until(lambda: _at(_pushed(client, path, 2), "FXS101") == [if_line + 2], what="moved diagnostics")
    status = (await _status(client))["folders"][0]
    assert status["running"] + status["queued"] >= 1  # the re-trace is held: these are the old results
    assert set(await _lenses(client, path)) == {block + 2, net + 2}
    assert set(await _hints(client, path, 60)) == {block + 2, net + 2}
    assert await _hover(client, path, new_line) is None  # the inserted line produced nothing (yet)
    moved = await _hover(client, path, moved_ret)
    assert moved is not None and "block" in moved
    assert await _hover(client, path, block + 2, len("class B")) is not None  # the class hover too
    # the graph view's places (what a click on a node, a module or a finding reveals) moved too
    doc = await _graph(client, "m.py::Net")
    lines = {n["name"]: n.get("line") for g in doc["graphs"] for n in g["nodes"] if n.get("file") == "m.py"}
    assert lines["mul"] == moved_ret + 1, doc
    modules = {m["path"]: m.get("line") for m in doc["modules"] if m.get("file") == "m.py"}
    assert modules == {"": net + 3, "block": block + 3}, doc
    assert [f["line"] for f in doc["findings"] if f["code"] == "FXS101"] == [if_line + 3], doc["findings"]

    (root / "hold").unlink()

    async def new_results() -> bool:
        value = await _hover(client, path, new_line)
        return value is not None and "mul" in value

    async def arrived() -> None:
        for _ in range(1200):
            if await new_results():
                return
            await asyncio.sleep(0.1)
        raise AssertionError("the re-trace never delivered")

    await arrived()
    await wait_until(lambda: _at(_pushed(client, path, 2), "FXS101") == [if_line + 2], what="final diagnostics")
    lenses = await _lenses(client, path)
    assert set(lenses) == {block + 2, net + 2}
    assert "block" in (await _hover(client, path, moved_ret) or "")


async def test_a_half_typed_line_keeps_the_last_results(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT, extra={"m.py": MODEL, "user.py": USER})
    await initialize(client, [root], VSCODE)
    path, user = root / "m.py", root / "user.py"
    text = open_doc(client, path)
    await wait_startup(client)
    if_line, ret_line = _line(text, "if y.sum() > 0:"), _line(text, "return self.block(x) * 2")
    await wait_until(lambda: _at(_pushed(client, path, 1), "FXS101") == [if_line], what="the first diagnostics")
    await wait_until(lambda: _at(client.diagnostics.get(uri(user)), "FXS101") == [], what="user.py traced")
    user_before = [p for p in client.published if p.uri == uri(user)]

    # half-typed: an unclosed call above `if`
    _edit(client, path, 2, _insert(if_line, "        z = len(\n"))
    await wait_until(lambda: _at(_pushed(client, path, 2), "FXS101") == [if_line + 1], what="kept diagnostics")
    status = (await _status(client))["folders"][0]
    assert status["running"] == 0 and status["queued"] == 0  # nothing is traced for a buffer that does not parse
    assert _no_fxs402(client)
    assert [p for p in client.published if p.uri == uri(user)] == user_before  # its importer keeps its results
    assert "block" in (await _hover(client, path, ret_line + 1) or "")

    # saved while broken: the disk does not parse, the open buffer still keeps the last results
    broken = text.replace("        if y.sum() > 0:\n", "        z = len(\n        if y.sum() > 0:\n")
    path.write_text(broken)
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri(path))))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=uri(path), type=types.FileChangeType.Changed)]))
    _edit(client, path, 3, _insert(if_line + 2, "        # still typing\n"))
    await wait_until(lambda: _at(_pushed(client, path, 3), "FXS101") == [if_line + 1], what="kept after the save")
    assert _no_fxs402(client)

    # the line completed: traced again (its own finding appears), nothing from the broken text
    end = types.Position(line=if_line, character=len("        z = len("))
    _edit(client, path, 4, types.TextDocumentContentChangePartial(range=types.Range(start=end, end=end), text="y)"))
    await wait_until(lambda: _at(_pushed(client, path, 4), "FXS103") == [if_line], timeout=240,
                     what="the completed line's finding")
    assert _at(_pushed(client, path, 4), "FXS101") == [if_line + 1]
    assert _no_fxs402(client)


async def test_a_buffer_opened_broken_shows_no_fxs402(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT, extra={"m.py": MODEL, "user.py": USER})
    await initialize(client, [root], VSCODE)
    path, user = root / "m.py", root / "user.py"
    await wait_startup(client)
    await wait_until(lambda: _at(client.diagnostics.get(uri(path)), "FXS101"), what="the disk's diagnostics")
    text = MODEL.replace("        if y.sum() > 0:\n", "        z = (\n        if y.sum() > 0:\n")
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri(path), language_id="python", version=1, text=text)))
    # the disk's results, mapped onto the buffer (one line was inserted above `if`)
    await wait_until(lambda: _at(_pushed(client, path, 1), "FXS101") == [_line(text, "if y.sum() > 0:")],
                     what="the disk's results at the buffer's lines")
    status = (await _status(client))["folders"][0]
    assert status["running"] == 0 and status["queued"] == 0
    assert _no_fxs402(client)
    assert not any(d.code == "FXS402" for d in client.diagnostics.get(uri(user), []))


async def test_full_text_sync_and_pull(client: LanguageClient, tmp_path):
    """A client that sends whole texts and pulls diagnostics (Neovim's capabilities, told to refresh)."""
    root = make_workspace(tmp_path / "ws", [], pyproject=PYPROJECT, extra={"m.py": MODEL})
    caps = capabilities(NEOVIM)
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    await initialize(client, [root], caps)
    path = root / "m.py"
    text = open_doc(client, path)
    await wait_startup(client)
    if_line, block, net = _line(text, "if y.sum() > 0:"), _line(text, "class Block"), _line(text, "class Net")

    async def pulled() -> list[int]:
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path))))
        return _at(report.items, "FXS101")

    for _ in range(600):
        if await pulled() == [if_line]:
            break
        await asyncio.sleep(0.1)
    assert await pulled() == [if_line]

    (root / "hold").touch()
    lines = text.split("\n")
    edited = "\n".join(lines[:block] + ["# one", "# two"] + lines[block:])
    change_doc(client, path, 2, edited)
    assert await pulled() == [if_line + 2]
    assert set(await _lenses(client, path)) == {block + 2, net + 2}
    assert "block" in (await _hover(client, path, _line(edited, "return self.block(x) * 2")) or "")
    assert await _hover(client, path, block) is None  # `# one`
    (root / "hold").unlink()
    for _ in range(1200):
        status = (await _status(client))["folders"][0]
        if status["running"] == 0 and status["queued"] == 0:
            break
        await asyncio.sleep(0.1)
    assert await pulled() == [if_line + 2]
    assert set(await _lenses(client, path)) == {block + 2, net + 2}
