"""Hover, code lens, code actions (each edit applied to the text) and commands, end to end."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import (NEOVIM, VSCODE, apply_edits, initialize, make_workspace, marker_line, open_doc, uri,
                         wait_startup, wait_until, workspace_edit_files)

pytestmark = pytest.mark.requires_torch

NEEDS_ARGS = '''import torch
from torch import nn


class Scaled(nn.Module):
    def __init__(self, secret, scale=2.0):  # a name that says nothing: fxscope cannot build it
        super().__init__()
        self.proj = nn.Linear(*secret)  # a pair: no int is guessed for it
        self.scale = scale

    def forward(self, x):
        return self.proj(x) * self.scale
'''

INT_SHAPE = '''import torch
from torch import nn


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(8, 2)

    def forward(self, x):
        steps = int(x.shape[1])  # FXS104 int-shape
        return self.head(x[:, : steps - 1].mean(1))
'''


async def _ready(client: LanguageClient, root: Path, file: str, code: str, tag: str | None = None):
    """Wait for a ``code`` diagnostic in ``file`` (on the line marked ``# tag`` when given)."""
    path = root / file
    line = marker_line(path.read_text(encoding="utf-8"), tag) - 1 if tag else None
    await wait_until(lambda: any(d.code == code and line in (None, d.range.start.line)
                                 for d in client.diagnostics.get(uri(path), [])), what=f"{code} in {file}")
    return path


async def _hover(client, path: Path, line0: int, character: int):
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line0, character=character)))


async def test_hover_on_a_traced_line_and_on_a_class(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["shared_class.py", "clean.py"])
    await initialize(client, [root], VSCODE)
    path = root / "shared_class.py"
    text = open_doc(client, path)
    await _ready(client, root, "shared_class.py", "FXS101")
    lines = text.split("\n")
    # Block.forward's residual line: one node group per Block instance in Stack, collapsed
    line0 = next(i for i, l in enumerate(lines) if "x = x + self.attn(self.norm1(x))" in l)
    character = lines[line0].index("self.attn") + 2
    await wait_startup(client)
    hover = await _hover(client, path, line0, character)
    assert hover is not None and hover.contents.kind == types.MarkupKind.Markdown
    value = hover.contents.value
    assert "blocks.*: Block × 3" in value, value
    assert "call_module" in value and "attn" in value and "norm1" in value
    # the class name: status, instances, node count
    cls0 = next(i for i, l in enumerate(lines) if l.startswith("class Block"))
    hover = await _hover(client, path, cls0, len("class B"))
    value = hover.contents.value
    assert value.startswith("**Block**") and "shared_class.Block" in value, value
    assert "blocks.0" in value and "nodes:" in value and "findings:" in value
    # a blank line has no hover
    blank = next(i for i, l in enumerate(lines) if not l.strip())
    assert await _hover(client, path, blank, 0) is None
    # a line past the end and a document nobody opened do not fail
    assert await _hover(client, path, 10_000, 3) is None
    assert await _hover(client, root / "missing.py", 1, 1) is None


async def test_code_lens_titles(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["shared_class.py", "clean.py"], extra={"needs_args.py": NEEDS_ARGS})
    await initialize(client, [root], VSCODE)
    await _ready(client, root, "shared_class.py", "FXS101")
    await _ready(client, root, "needs_args.py", "FXS405")
    await wait_startup(client)

    async def lenses(path):
        got = await client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path))))
        text = path.read_text().split("\n")
        return {text[l.range.start.line].split("(")[0].replace("class ", ""): l.command for l in got}

    clean = await lenses(root / "clean.py")
    assert clean["MLP"].title.startswith("traced · ") and " nodes" in clean["MLP"].title, clean["MLP"]
    assert clean["MLP"].command == "fxscope.showGraph" and clean["MLP"].arguments[0] == "clean.py::MLP"
    shared = await lenses(root / "shared_class.py")
    # Attention's own forward fails: no graph of its own, one untraceable line
    assert shared["Attention"].title == "failed · 1 untraceable line", shared["Attention"]
    assert shared["Block"].title.startswith("partial · ") and "nodes · a failing submodule" in shared["Block"].title, shared["Block"]
    needs = await lenses(root / "needs_args.py")
    assert needs["Scaled"].title == "not traced: needs constructor arguments (configure a factory)"
    # clicking a lens runs showGraph: text plus the graph document (docs/graph-format.md)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=clean["MLP"].command, arguments=clean["MLP"].arguments))
    assert result["text"].startswith("graph clean.py::MLP")
    doc = result["graph"]
    assert doc["version"] == 1 and doc["target"] == "clean.py::MLP" and doc["module"] is None
    assert doc["status"] == "traced" and doc["findings"] == []
    nodes = {n["name"]: n for n in doc["graphs"][0]["nodes"]}
    assert nodes["output"]["inputs"] and all(i in nodes for n in nodes.values() for i in n["inputs"])
    assert {m["path"]: m["status"] for m in doc["modules"]}[""] == "traced"
    assert result["folder"] == uri(root)
    # a partial target: its failing modules (every Attention instance) and their finding, as the
    # renderer highlights them
    stack = (await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxscope.showGraph", arguments=["shared_class.py::Stack", None, uri(root)])))["graph"]
    statuses = {m["path"]: m["status"] for m in stack["modules"]}
    assert stack["status"] == "partial" and statuses["blocks.1.attn"] == "failed", statuses
    assert [f["code"] for f in stack["findings"]] == ["FXS101"]
    # the module path is honoured: that block's subgraph, modules and findings only
    block = (await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxscope.showGraph", arguments=["shared_class.py::Stack", "blocks.1"])))["graph"]
    assert block["module"] == "blocks.1" and block["graphs"]
    assert all(n["scope"].startswith("blocks.1") for g in block["graphs"] for n in g["nodes"])
    assert {m["path"] for m in block["modules"]} == {p for p in statuses if p.startswith("blocks.1")}
    assert [f["code"] for f in block["findings"]] == ["FXS101"]
    norm = (await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxscope.showGraph", arguments=["shared_class.py::Stack", "norm"])))["graph"]
    assert norm["findings"] == [] and [m["path"] for m in norm["modules"]] == ["norm"]
    with pytest.raises(Exception, match="no module"):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fxscope.showGraph", arguments=["shared_class.py::Stack", "no.such.module"]))


async def _actions(client, path: Path, line0: int) -> dict[str, types.CodeAction]:
    diags = [d for d in client.diagnostics.get(uri(path), []) if d.range.start.line == line0]
    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(start=types.Position(line=line0, character=0), end=types.Position(line=line0, character=0)),
        context=types.CodeActionContext(diagnostics=diags)))
    return {a.title: a for a in got or []}


def _apply(action: types.CodeAction, files: dict[str, str]) -> dict[str, str]:
    """The texts (by URI) after applying ``action``'s edit; a created file starts empty."""
    out = dict(files)
    for u, edits in workspace_edit_files(action.edit).items():
        out[u] = apply_edits(out.get(u, ""), edits)
    return out


async def test_each_code_action_applies(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py", "helpers.py", "uses_helpers.py"],
                          extra={"needs_args.py": NEEDS_ARGS, "int_shape.py": INT_SHAPE},
                          pyproject='[project]\nname = "demo"\n\n[tool.fxscope]\ntimeout = 20\n')
    await initialize(client, [root], VSCODE)
    await wait_startup(client)
    py_uri = uri(root / "pyproject.toml")

    # len(x) -> x.size(0), and the suppress comment
    path = await _ready(client, root, "length.py", "FXS103", "FXS103 len")
    await _ready(client, root, "length.py", "FXS103", "FXS103 inner")
    text = open_doc(client, path)
    line = marker_line(text, "FXS103 len")
    actions = await _actions(client, path, line - 1)
    assert "Replace with `x.size(0)` (recorded in the graph)" in actions, list(actions)
    files = {uri(path): text, py_uri: (root / "pyproject.toml").read_text()}
    fixed = _apply(actions["Replace with `x.size(0)` (recorded in the graph)"], files)[uri(path)]
    assert fixed.split("\n")[line - 1] == "        n = x.size(0)  # FXS103 len"
    ast.parse(fixed)
    suppressed = _apply(actions["Suppress FXS103 on this line"], files)[uri(path)]
    assert suppressed.split("\n")[line - 1].endswith("# FXS103 len  # fxscope: ignore[FXS103]")
    # Inner fails inside Middle and Outer: keep it opaque
    line = marker_line(text, "FXS103 inner")
    actions = await _actions(client, path, line - 1)
    leaf = _apply(actions["Keep `Inner` opaque: add it to leaf-modules in pyproject.toml"], files)[py_uri]
    assert tomllib.loads(leaf)["tool"]["fxscope"]["leaf-modules"] == ["length.Inner"]
    assert tomllib.loads(leaf)["project"]["name"] == "demo"

    # a failing helper function: wrap it
    hpath = await _ready(client, root, "helpers.py", "FXS101", "FXS101 helper")
    htext = open_doc(client, hpath)
    actions = await _actions(client, hpath, marker_line(htext, "FXS101 helper") - 1)
    wrap = next(a for t, a in actions.items() if "wrap-functions" in t)
    data = tomllib.loads(_apply(wrap, files)[py_uri])
    (entry,) = data["tool"]["fxscope"]["wrap-functions"]
    assert entry.startswith("helpers:")

    # int(x.shape[1]) -> x.size(1)
    ipath = await _ready(client, root, "int_shape.py", "FXS104", "FXS104 int-shape")
    itext = open_doc(client, ipath)
    line = marker_line(itext, "FXS104 int-shape")
    actions = await _actions(client, ipath, line - 1)
    fixed = _apply(actions["Replace with `x.size(1)` (stays a traced value)"], {uri(ipath): itext})[uri(ipath)]
    assert fixed.split("\n")[line - 1] == "        steps = x.size(1)  # FXS104 int-shape"

    # FXS405: a target in pyproject.toml and a template factory in fxscope_targets.py
    npath = await _ready(client, root, "needs_args.py", "FXS405")
    ntext = open_doc(client, npath)
    line0 = next(i for i, l in enumerate(ntext.split("\n")) if l.startswith("class Scaled"))
    actions = await _actions(client, npath, line0)
    factory = next(a for t, a in actions.items() if t.startswith("Create an fxscope target for `Scaled`"))
    out = _apply(factory, files)
    target = tomllib.loads(out[py_uri])["tool"]["fxscope"]["targets"]["scaled"]
    assert target == {"factory": "fxscope_targets:build_scaled"}
    tree = ast.parse(out[uri(root / "fxscope_targets.py")])
    assert tree.body[-1].name == "build_scaled" and "Scaled(secret=...)" in out[uri(root / "fxscope_targets.py")]


async def test_commands_and_progress(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py", "clean.py"])
    await initialize(client, [root], VSCODE)
    await _ready(client, root, "length.py", "FXS103")

    def progress_ended():
        return any(any(isinstance(v, types.WorkDoneProgressEnd) for v in values)
                   for values in client.progress_reports.values())

    await wait_until(progress_ended, what="the start-up progress to end")
    values = next(v for v in client.progress_reports.values() if any(isinstance(x, types.WorkDoneProgressEnd) for x in v))
    assert isinstance(values[0], types.WorkDoneProgressBegin) and "targets" in (values[0].message or "")
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    (folder,) = status["folders"]
    assert folder["total"] >= 10 and folder["done"] == folder["total"]
    assert status["server"]["diagnostics"] == "push" and status["server"]["encoding"] == "utf-16"
    assert status["server"]["torch_imported"] is False  # traces run in the worker processes only
    graph = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxscope.showGraph", arguments=["length.py::Outer", None]))
    assert graph["text"].startswith("graph length.py::Outer (root)") and "middle" in graph["text"]
    assert graph["graph"]["graphs"][0]["module"] == ""
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.clearCache"))
    assert not list((root / ".fxscope_cache").glob("*.json"))
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fxscope.retrace", arguments=[uri(root / "length.py")]))
    # malformed calls are errors, not crashes
    for bad in (["fxscope.showGraph", []], ["fxscope.showGraph", [42]], ["fxscope.retrace", [1, 2]],
                ["fxscope.showGraph", ["no/such.py::Target"]], ["fxscope.nope", []]):
        with pytest.raises(Exception):
            await client.workspace_execute_command_async(types.ExecuteCommandParams(command=bad[0], arguments=bad[1]))
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    assert status["folders"][0]["root"] == str(root)


async def test_multi_root_and_inlay_hints(client: LanguageClient, tmp_path):
    a = make_workspace(tmp_path / "a", ["length.py"])
    b = make_workspace(tmp_path / "b", ["control_flow.py", "clean.py"])
    await initialize(client, [a, b], NEOVIM, options={"inlayHints": True})
    for root, file, code in ((a, "length.py", "FXS103"), (b, "control_flow.py", "FXS101")):
        path = root / file
        open_doc(client, path)
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri(path))))
        assert {d.code for d in report.items} == {code}
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    assert sorted(f["root"] for f in status["folders"]) == sorted([str(a), str(b)])
    path = b / "clean.py"
    text = open_doc(client, path)
    # its results come after the open files' (a pull waits for them: this client cannot be refreshed)
    await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(start=types.Position(line=0, character=0),
                          end=types.Position(line=len(text.split("\n")), character=0))))
    labels = {text.split("\n")[h.position.line]: h.label for h in hints}
    assert labels["class MLP(nn.Module):"].startswith("traced · ")
    # removing a folder closes its workspace
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        event=types.WorkspaceFoldersChangeEvent(added=[], removed=[types.WorkspaceFolder(uri=uri(a), name="a")])))
    await wait_until(lambda: True)
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    assert [f["root"] for f in status["folders"]] == [str(b)]
