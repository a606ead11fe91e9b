"""The language server's feature handlers in process, fast: the real server object (every handler
registered as in ``fxscope serve``) behind a fake transport that records what it writes, fed
JSON-RPC messages as a client sends them, with a real session whose results are delivered by hand
(no worker, no torch): push and pull diagnostics, hovers, code lenses and quick fixes, for a file
and for the cells of an open notebook. The end-to-end tests (a real server over stdio, real
traces) are the other files of this directory."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from lsprotocol.converters import get_converter
from pytest_lsp import client_capabilities

from fxscope.engine.results import TargetResult
from fxscope.lsp.notebooks import view_of
from fxscope.lsp.server import FxscopeServer, create_server
from fxscope.model import Location, TargetOutcome
from fxscope.project.discovery import Target
from fxscope.project.notebooks import make_notebook
from lsp_support import VSCODE, uri

MODELS = '''from torch import nn


class Block(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        return x.relu()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x)
'''

_CONVERTER = get_converter()


def _json(value: Any) -> Any:
    return _CONVERTER.unstructure(value)


class FakeTransport:
    """The server's writer: keeps every message it sends (JSON-RPC, no headers)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m["params"] for m in self.sent if m.get("method") == method and "id" not in m]


class InProcessClient:
    """Sends a client's messages to a server object in this process and reads its answers."""

    def __init__(self, server: FxscopeServer) -> None:
        self.server = server
        self.transport = FakeTransport()
        server.protocol.set_writer(self.transport, include_headers=False)
        self._next_id = 0

    def _handle(self, message: dict[str, Any]) -> None:
        protocol = self.server.protocol
        protocol.handle_message(protocol.structure_message({"jsonrpc": "2.0", **message}))

    def notify(self, method: str, params: Any) -> None:
        self._handle({"method": method, "params": _json(params)})

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        request_id = self._next_id
        self._handle({"id": request_id, "method": method, "params": _json(params)})
        for _ in range(500):  # a thread or coroutine handler answers on a later turn of the loop
            answer = next((m for m in self.transport.sent if m.get("id") == request_id and "method" not in m), None)
            if answer is not None:
                assert "error" not in answer, answer["error"]
                return answer["result"]
            await asyncio.sleep(0.01)
        raise AssertionError(f"no answer to {method}")


def _capabilities(pull: bool) -> types.ClientCapabilities:
    caps = client_capabilities(VSCODE)
    assert caps.text_document is not None and caps.workspace is not None
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities())
    if not pull:
        caps.text_document.diagnostic = None
    else:
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(related_document_support=True)
        caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    return caps


@pytest.fixture
def connect(tmp_path: Path) -> Iterator[Any]:
    """Start a server on ``tmp_path`` (initialized; edits re-check nothing until saved)."""
    servers: list[FxscopeServer] = []

    async def start(pull: bool = False) -> InProcessClient:
        server = create_server()
        servers.append(server)
        server.loop = asyncio.get_running_loop()  # what `initialized` attaches (without its log handler)
        client = InProcessClient(server)
        result = await client.request(types.INITIALIZE, types.InitializeParams(
            capabilities=_capabilities(pull), root_uri=uri(tmp_path),
            workspace_folders=[types.WorkspaceFolder(uri=uri(tmp_path), name="ws")],
            initialization_options={"traceOn": "save"}))
        assert result["capabilities"]["hoverProvider"]
        server.ctx.ready.add(tmp_path.resolve())  # the start-up round is not run: results come by hand
        return client

    yield start
    for server in servers:
        server.close_all()


def _body(status: str, findings: list[dict[str, Any]], modules: list[dict[str, Any]],
          nodes: list[dict[str, Any]], file: str) -> dict[str, Any]:
    return {"status": status, "nodes": len(nodes), "findings": findings, "modules": modules,
            "graphs": [{"module": "", "nodes": nodes}] if nodes else [], "files": {file: "h"}}


def _results(targets: dict[str, Target], file: str, line_of: Any) -> list[TargetResult]:
    """Block fails at its `if` (FXS101); Net traces, its `self.block(x)` one call_module node."""
    block, net = targets[f"{file}::Block"], targets[f"{file}::Net"]
    branch = {"code": "FXS101", "severity": "error", "message": "a traced value decides an `if` condition",
              "file": file, "line": line_of("if x.sum()"), "column": 12, "end_column": 23,
              "scopes": [{"path": "", "type": "models.Block"}]}
    block_module = {"path": "", "type": "models.Block", "status": "failed", "params": 0, "file": file,
                    "line": block.line}
    net_modules = [{"path": "", "type": "models.Net", "status": "traced", "params": 0, "file": file,
                    "line": net.line},
                   {**block_module, "path": "block"}]
    nodes = [{"name": "x", "op": "placeholder", "target": "x", "scope": "", "scope_type": "models.Net", "inputs": []},
             {"name": "block", "op": "call_module", "target": "block", "scope": "block", "scope_type": "models.Block",
              "inputs": ["x"], "file": file, "line": line_of("return self.block(x)")},
             {"name": "output", "op": "output", "target": "output", "scope": "", "scope_type": "models.Net",
              "inputs": ["block"]}]
    return [TargetResult(block, TargetOutcome.from_json(_body("failed", [branch], [block_module], [], file),
                                                        target=block.id)),
            TargetResult(net, TargetOutcome.from_json(_body("traced", [], net_modules, nodes, file), target=net.id))]


def _deliver(client: InProcessClient, path: Path, source: str) -> None:
    """Discover the folder's targets (AST only) and deliver Block's and Net's results."""
    folder = client.server.ctx.folders.for_path(path, create=False)
    assert folder is not None
    ws = folder.workspace
    snapshot = ws.snapshot()
    discovery, _ = ws.targets.discover(ws.config, snapshot)
    lines = source.splitlines()
    rel = path.relative_to(folder.root).as_posix()

    def line_of(text: str) -> int:
        return next(i for i, line in enumerate(lines, 1) if text in line)

    for result in _results({t.id: t for t in discovery.targets}, rel, line_of):
        assert ws.deliver(result, snapshot, discovery)


def _open(client: InProcessClient, path: Path, text: str) -> None:
    client.notify(types.TEXT_DOCUMENT_DID_OPEN, types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri(path), language_id="python", version=1, text=text)))


async def _settle() -> None:
    for _ in range(5):  # events are posted to the loop
        await asyncio.sleep(0)


def _at(path: Path, line0: int, character: int) -> dict[str, Any]:
    return {"textDocument": {"uri": uri(path)}, "position": {"line": line0, "character": character}}


async def test_pushed_diagnostics_hovers_lenses_and_a_quick_fix(tmp_path: Path, connect: Any) -> None:
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    client = await connect()
    _open(client, path, MODELS)
    _deliver(client, path, MODELS)
    await _settle()

    [published] = [p for p in client.transport.notifications(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
                   if p["diagnostics"]]
    assert published["uri"] == uri(path) and published["version"] == 1
    [diagnostic] = published["diagnostics"]
    assert (diagnostic["code"], diagnostic["severity"], diagnostic["source"]) == ("FXS101", 1, "fxscope")
    assert diagnostic["range"] == {"start": {"line": 5, "character": 11}, "end": {"line": 5, "character": 22}}

    hover = await client.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(**_hover_args(path, 16, 20)))
    assert "call_module" in hover["contents"]["value"] and "block" in hover["contents"]["value"]
    assert await client.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(**_hover_args(path, 1, 0))) is None
    block_hover = await client.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(**_hover_args(path, 3, 8)))
    assert "Block" in block_hover["contents"]["value"] and "failed" in block_hover["contents"]["value"]

    lenses = await client.request(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    titles = {lens["range"]["start"]["line"]: lens["command"]["title"] for lens in lenses}
    assert set(titles) == {3, 10}, titles
    assert "untraceable" in titles[3] or "FXS101" in titles[3] or "fail" in titles[3], titles
    assert "traced" in titles[10], titles

    actions = await client.request(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(start=types.Position(line=5, character=11), end=types.Position(line=5, character=22)),
        context=types.CodeActionContext(diagnostics=[_CONVERTER.structure(diagnostic, types.Diagnostic)])))
    [suppress] = [a for a in actions if a["title"] == "Suppress FXS101 on this line"]
    [change] = suppress["edit"]["documentChanges"]
    assert change["textDocument"] == {"uri": uri(path), "version": 1}
    [edit] = change["edits"]
    line = MODELS.splitlines()[5]
    assert edit["range"] == {"start": {"line": 5, "character": len(line)}, "end": {"line": 5, "character": len(line)}}
    assert line + edit["newText"] == "        if x.sum() > 0:  # fxscope: ignore[FXS101]"


def _hover_args(path: Path, line0: int, character: int) -> dict[str, Any]:
    return {"text_document": types.TextDocumentIdentifier(uri=uri(path)),
            "position": types.Position(line=line0, character=character)}


async def test_pulled_diagnostics_and_an_unchanged_answer(tmp_path: Path, connect: Any) -> None:
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    client = await connect(pull=True)
    _open(client, path, MODELS)
    _deliver(client, path, MODELS)
    await _settle()
    assert not client.transport.notifications(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)  # a pull client is not pushed
    params = types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri(path)))
    report = await client.request(types.TEXT_DOCUMENT_DIAGNOSTIC, params)
    assert report["kind"] == "full" and [d["code"] for d in report["items"]] == ["FXS101"]
    again = await client.request(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DocumentDiagnosticParams(
        text_document=params.text_document, previous_result_id=report["resultId"]))
    assert again == {"kind": "unchanged", "resultId": report["resultId"]}


async def test_an_edit_moves_the_pushed_diagnostics_with_the_text(tmp_path: Path, connect: Any) -> None:
    path = tmp_path / "models.py"
    path.write_text(MODELS)
    client = await connect()
    _open(client, path, MODELS)
    _deliver(client, path, MODELS)
    await _settle()
    client.notify(types.TEXT_DOCUMENT_DID_CHANGE, types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            text="import torch\n\n")]))
    for _ in range(100):  # the moved diagnostics are pushed after a short delay
        moved = [p for p in client.transport.notifications(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
                 if p.get("version") == 2 and p["diagnostics"]]
        if moved:
            break
        await asyncio.sleep(0.02)
    assert [d["range"]["start"]["line"] for d in moved[-1]["diagnostics"]] == [7]


BLOCK_CELL, NET_CELL = (MODELS[MODELS.index("class Block"):MODELS.index("\n\nclass Net")],
                        MODELS[MODELS.index("class Net"):])
NOTEBOOK_CELLS = [("markdown", "# Models"), ("code", "from torch import nn\n"), ("code", BLOCK_CELL),
                  ("code", NET_CELL)]


def test_a_notebook_view_maps_code_lines_to_cells_and_back(tmp_path: Path) -> None:
    cells = [(f"vscode-notebook-cell:/nb.ipynb#c{i}", kind, text) for i, (kind, text) in enumerate(NOTEBOOK_CELLS)]
    view = view_of(tmp_path / "nb.ipynb", 3, cells)
    assert [(c.number, c.first_line, c.code_lines) for c in view.cells] == [(2, 1, 1), (3, 2, 5), (4, 7, 7)]
    assert view.text == make_notebook([(kind, text) for _, kind, text in cells])
    cell, local = view.local(Location("nb.ipynb", 4, 12, 9, 3))  # ends in the next cell: to its cell's end
    assert (cell.number, local.line, local.end_line, local.end_column) == (3, 3, 5, None)
    assert view.code_line(cells[2][0], 3) == 4
    assert view.code_line(cells[2][0], len(view.cells[1].lines)) is None  # the cell's trailing empty line
    assert view.cell_of(7) is view.cells[2] and view.cell_of(14) is None


async def test_notebook_cells_get_their_own_diagnostics_and_hovers(tmp_path: Path, connect: Any) -> None:
    path = tmp_path / "nb.ipynb"
    path.write_text(make_notebook(NOTEBOOK_CELLS))
    client = await connect()
    cell_uris = [f"vscode-notebook-cell:{path.as_posix()}#c{i}" for i in range(len(NOTEBOOK_CELLS))]
    client.notify(types.NOTEBOOK_DOCUMENT_DID_OPEN, types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(
            uri=uri(path), notebook_type="jupyter-notebook", version=1,
            cells=[types.NotebookCell(kind=types.NotebookCellKind.Code if kind == "code" else types.NotebookCellKind.Markup,
                                      document=cell_uri) for cell_uri, (kind, _) in zip(cell_uris, NOTEBOOK_CELLS)]),
        cell_text_documents=[types.TextDocumentItem(uri=cell_uri, language_id="python", version=1, text=text)
                             for cell_uri, (kind, text) in zip(cell_uris, NOTEBOOK_CELLS) if kind == "code"]))
    code = "".join(text for kind, text in NOTEBOOK_CELLS if kind == "code")
    _deliver(client, path, code)
    await _settle()
    by_uri = {p["uri"]: p["diagnostics"] for p in client.transport.notifications(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)}
    [diagnostic] = by_uri[cell_uris[2]]  # Block's cell, at the `if` in that cell
    assert diagnostic["range"]["start"] == {"line": 2, "character": 11}
    assert not by_uri.get(cell_uris[3])
    hover = await client.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=cell_uris[3]), position=types.Position(line=6, character=20)))
    assert "call_module" in hover["contents"]["value"]
    trailing = await client.request(types.TEXT_DOCUMENT_HOVER, types.HoverParams(  # after the cell's last newline
        text_document=types.TextDocumentIdentifier(uri=cell_uris[2]), position=types.Position(line=5, character=0)))
    assert trailing is None
