"""Notebook document sync (LSP 3.17) end to end: a real server over stdio and a client with VS Code's
capabilities plus notebook sync. A notebook is opened as VS Code opens one (its cells, the text of
its Python cells as cell documents); diagnostics, hovers and code lenses come per cell, at lines
inside the cell, and follow the cells as one is edited into an untraceable line and back, and as
cells are added, moved and removed. Pull clients get the same per cell."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxscope.project.notebooks import make_notebook
from lsp_support import VSCODE, capabilities, initialize, make_workspace, uri, wait_startup, wait_until

pytestmark = pytest.mark.requires_torch

IMPORTS = "import torch\nfrom torch import nn\n%matplotlib inline"
NET = """class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        return y.relu()"""
UNTRACEABLE = NET.replace("        y = self.proj(x)",
                          "        y = self.proj(x)\n        if y.sum() > 0:\n            y = y * 2")
GATE = """class Gate(nn.Module):
    def forward(self, x):
        return x * 2 if x.mean() > 0 else x"""
TRAINING = "model = Net()\nfor step in range(2):\n    model(torch.randn(2, 4)).sum().backward()"


def notebook_caps(pull: bool = False) -> types.ClientCapabilities:
    """VS Code's capabilities with notebook sync (and pull diagnostics, as vscode-languageclient 9 has)."""
    caps = capabilities(VSCODE)
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(execution_summary_support=True))
    if pull:
        assert caps.text_document is not None
        caps.text_document.diagnostic = types.DiagnosticClientCapabilities(related_document_support=True)
    return caps


@dataclass
class Notebook:
    """A notebook as an editor holds it: cells (uri, kind, text) and a version."""

    path: Path
    cells: list[tuple[str, str, str]] = field(default_factory=list)
    version: int = 1
    made: int = 0

    @property
    def uri(self) -> str:
        return uri(self.path)

    def cell_uri(self) -> str:
        self.made += 1
        return f"vscode-notebook-cell:{quote(str(self.path))}#W{self.made}sZmlsZQ%3D%3D"

    def add(self, kind: str, text: str) -> str:
        cell = self.cell_uri()
        self.cells.append((cell, kind, text))
        return cell

    def lsp_cells(self, cells: list[tuple[str, str, str]] | None = None) -> list[types.NotebookCell]:
        kinds = {"code": types.NotebookCellKind.Code, "markdown": types.NotebookCellKind.Markup}
        return [types.NotebookCell(kind=kinds[kind], document=cell)
                for cell, kind, _ in (cells if cells is not None else self.cells)]

    def items(self, cells: list[tuple[str, str, str]] | None = None) -> list[types.TextDocumentItem]:
        return [types.TextDocumentItem(uri=cell, language_id="python" if kind == "code" else "markdown",
                                       version=1, text=text)
                for cell, kind, text in (cells if cells is not None else self.cells) if kind == "code"]

    def text(self, cell: str) -> str:
        return next(t for u, _, t in self.cells if u == cell)


def open_notebook(client: LanguageClient, nb: Notebook) -> None:
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=nb.uri, notebook_type="jupyter-notebook", version=nb.version,
                                                 cells=nb.lsp_cells()),
        cell_text_documents=nb.items()))


def edit_cell(client: LanguageClient, nb: Notebook, cell: str, text: str) -> None:
    nb.version += 1
    nb.cells = [(u, k, text if u == cell else t) for u, k, t in nb.cells]
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(version=nb.version, uri=nb.uri),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cell, version=nb.version),
                changes=[types.TextDocumentContentChangeWholeDocument(text=text)])]))))


def splice(client: LanguageClient, nb: Notebook, start: int, delete: int,
           insert: list[tuple[str, str, str]], *, moved: bool = False) -> None:
    """Replace ``delete`` cells at ``start`` by ``insert`` (a move re-inserts cells the notebook had)."""
    nb.version += 1
    removed = nb.cells[start:start + delete]
    nb.cells[start:start + delete] = insert
    kept = {u for u, _, _ in nb.cells}
    client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(version=nb.version, uri=nb.uri),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(
            structure=types.NotebookDocumentCellChangeStructure(
                array=types.NotebookCellArrayChange(start=start, delete_count=delete, cells=nb.lsp_cells(insert)),
                did_open=nb.items(insert),
                did_close=[types.TextDocumentIdentifier(uri=u) for u, _, _ in removed if moved or u not in kept])))))


def diagnostics(client: LanguageClient, cell: str) -> list[tuple[str, int, int, int]]:
    return sorted((str(d.code), d.range.start.line + 1, d.range.start.character, d.range.end.character)
                  for d in client.diagnostics.get(cell, []))


def position_of(text: str, needle: str) -> tuple[int, int, int]:
    """(1-based line, start character, end character) of ``needle`` in ``text`` (ASCII)."""
    for number, line in enumerate(text.split("\n"), 1):
        if needle in line:
            return number, line.index(needle), line.index(needle) + len(needle)
    raise AssertionError(needle)


async def hover_text(client: LanguageClient, cell: str, line: int, character: int) -> str:
    result = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=cell),
        position=types.Position(line=line - 1, character=character)))
    return result.contents.value if result is not None and isinstance(result.contents, types.MarkupContent) else ""


async def lens_titles(client: LanguageClient, cell: str) -> list[tuple[int, str]]:
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=cell)))
    return [(lens.range.start.line + 1, lens.command.title if lens.command else "") for lens in lenses or ()]


def workspace(tmp_path: Path) -> tuple[Path, Notebook]:
    root = make_workspace(tmp_path / "ws", [])
    nb = Notebook(root / "model.ipynb")
    nb.add("markdown", "# A model")
    nb.add("code", IMPORTS)
    nb.add("code", NET)
    nb.add("code", TRAINING)
    nb.path.write_text(make_notebook([(k, t) for _, k, t in nb.cells]), encoding="utf-8")
    return root, nb


@pytest.mark.slow
async def test_notebook_cells_get_diagnostics_hovers_and_lenses(client: LanguageClient, tmp_path: Path) -> None:
    root, nb = workspace(tmp_path)
    result = await initialize(client, [root], notebook_caps())
    sync = result.capabilities.notebook_document_sync
    assert isinstance(sync, types.NotebookDocumentSyncOptions)
    (selector,) = sync.notebook_selector
    assert selector.notebook == "jupyter-notebook" and [c.language for c in selector.cells or ()] == ["python"]
    await wait_startup(client)
    open_notebook(client, nb)
    _, imports, net, training = (u for u, _, _ in nb.cells)
    line, start, _ = position_of(NET, "self.proj(x)")

    # a traced line of a cell: its graph nodes; above the class: its lens
    text = ""
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not ("proj" in text and "model.ipynb::Net" in text):
        await asyncio.sleep(0.2)
        text = await hover_text(client, net, line, start + 6)
    assert "proj" in text and "model.ipynb::Net" in text, text
    ((lens_line, title),) = await lens_titles(client, net)
    assert lens_line == 1 and title.startswith("traced · 4 nodes"), title
    assert await lens_titles(client, imports) == []
    assert not any(client.diagnostics.get(u) for u, _, _ in nb.cells)

    # edit the class's cell into an untraceable line: the diagnostic is in that cell, at its line
    edit_cell(client, nb, net, UNTRACEABLE)
    bad_line, bad_start, bad_end = position_of(UNTRACEABLE, "y.sum() > 0")
    await wait_until(lambda: diagnostics(client, net) == [("FXS101", bad_line, bad_start, bad_end)],
                     what="FXS101 in the class's cell")
    assert not client.diagnostics.get(training) and not client.diagnostics.get(imports)
    assert any("failed" in t or "partial" in t for _, t in await lens_titles(client, net))

    # ... and back
    edit_cell(client, nb, net, NET)
    await wait_until(lambda: diagnostics(client, net) == [], what="the diagnostic to go")

    # a new untraceable class in a cell added before the others: its own cell, its own lines
    gate = nb.cell_uri()
    splice(client, nb, 1, 0, [(gate, "code", "import torch\nfrom torch import nn\n" + GATE)])
    gate_line, gate_start, gate_end = position_of("import torch\nfrom torch import nn\n" + GATE, "x.mean() > 0")
    await wait_until(lambda: diagnostics(client, gate) == [("FXS101", gate_line, gate_start, gate_end)],
                     what="FXS101 in the added cell")
    assert diagnostics(client, net) == []

    # move the Gate cell after the training cell: the diagnostic stays with its cell
    gate_cell = nb.cells[1]
    splice(client, nb, 1, 1, [], moved=True)
    splice(client, nb, len(nb.cells), 0, [gate_cell], moved=True)
    assert [u for u, _, _ in nb.cells][-1] == gate
    await wait_until(lambda: diagnostics(client, gate) == [("FXS101", gate_line, gate_start, gate_end)],
                     what="the moved cell's diagnostic")

    # remove it: what it showed goes with it
    splice(client, nb, len(nb.cells) - 1, 1, [])
    await wait_until(lambda: diagnostics(client, gate) == [], what="the removed cell's diagnostic to go")

    # the training cell never ran, and closing the notebook clears its cells
    edit_cell(client, nb, net, UNTRACEABLE)
    await wait_until(lambda: diagnostics(client, net) != [], what="FXS101 again")
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=nb.uri),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u, k, _ in nb.cells if k == "code"]))
    await wait_until(lambda: all(not client.diagnostics.get(u) for u, _, _ in nb.cells), what="cells cleared")


async def test_pull_clients_get_each_cells_diagnostics(client: LanguageClient, tmp_path: Path) -> None:
    root, nb = workspace(tmp_path)
    _, imports, net, _ = (u for u, _, _ in nb.cells)
    nb.cells[2] = (net, "code", UNTRACEABLE)
    await initialize(client, [root], notebook_caps(pull=True))
    open_notebook(client, nb)
    bad_line, bad_start, bad_end = position_of(UNTRACEABLE, "y.sum() > 0")

    async def pull(cell: str) -> types.DocumentDiagnosticReport:
        return await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=cell)))

    report = await pull(net)  # a client that cannot be told to refresh: answered once the trace is in
    assert [(d.code, d.range.start.line + 1, d.range.start.character, d.range.end.character)
            for d in report.items] == [("FXS101", bad_line, bad_start, bad_end)]
    assert list((await pull(imports)).items) == []
    again = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=net), previous_result_id=report.result_id))
    assert again.kind == "unchanged"
    ws = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    by_uri = {item.uri: [d.code for d in item.items] for item in ws.items}
    assert by_uri.get(net) == ["FXS101"] and uri(nb.path) not in by_uri
    assert not client.diagnostics  # nothing pushed to a pull client


async def test_bad_notebook_messages_leave_the_server_working(client: LanguageClient, tmp_path: Path) -> None:
    root, nb = workspace(tmp_path)
    await initialize(client, [root], notebook_caps())
    stranger = Notebook(root / "never_opened.ipynb")
    cell = stranger.add("code", "x = 1")
    edit_cell(client, stranger, cell, "x = 2")  # a change to a notebook that was never opened
    client.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=stranger.uri), cell_text_documents=[]))
    untitled = types.NotebookDocument(uri="untitled:Untitled-1.ipynb", notebook_type="jupyter-notebook", version=1,
                                      cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document="c1")])
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=untitled, cell_text_documents=[
            types.TextDocumentItem(uri="c1", language_id="python", version=1, text="import torch")]))
    assert await hover_text(client, "c1", 1, 1) == ""  # not a file: not fxscope's
    # a cell listed without its text (another language) and a class split over cells: still served
    _, imports, net, _ = (u for u, _, _ in nb.cells)
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=nb.uri, notebook_type="jupyter-notebook", version=1,
                                                 cells=nb.lsp_cells()),
        cell_text_documents=[item for item in nb.items() if item.uri != imports]))
    edit_cell(client, nb, net, "import torch\nfrom torch import nn\n" + UNTRACEABLE)
    bad_line, bad_start, bad_end = position_of("import torch\nfrom torch import nn\n" + UNTRACEABLE, "y.sum() > 0")
    await wait_until(lambda: diagnostics(client, net) == [("FXS101", bad_line, bad_start, bad_end)],
                     timeout=180, what="FXS101 after the bad messages")


@pytest.mark.slow
async def test_cell_results_follow_edits_and_a_cell_that_does_not_parse_keeps_them(
        client: LanguageClient, tmp_path: Path) -> None:
    """Lines inserted at the top of a cell move its diagnostics and lenses while the re-trace is
    held (its forward waits while a file named ``hold`` exists); a half-typed cell gets no FXS402."""
    root = make_workspace(tmp_path / "ws", [])
    hold = root / "hold"
    imports = IMPORTS + f"\nimport os\nimport time\nHOLD = {str(hold)!r}\n\n\ndef hold():\n" \
        "    while os.path.exists(HOLD):\n        time.sleep(0.05)"
    held = UNTRACEABLE.replace("    def forward(self, x):\n", "    def forward(self, x):\n        hold()\n")
    nb = Notebook(root / "model.ipynb")
    first = nb.add("code", imports)
    net = nb.add("code", held)
    nb.path.write_text(make_notebook([(k, t) for _, k, t in nb.cells]), encoding="utf-8")
    await initialize(client, [root], notebook_caps())
    await wait_startup(client)
    open_notebook(client, nb)
    line, start, end = position_of(held, "y.sum() > 0")
    await wait_until(lambda: diagnostics(client, net) == [("FXS101", line, start, end)], what="the first diagnostic")

    hold.touch()
    edit_cell(client, nb, net, "# one\n# two\n" + held)
    await wait_until(lambda: diagnostics(client, net) == [("FXS101", line + 2, start, end)], what="moved diagnostic")
    assert [lens_line for lens_line, _ in await lens_titles(client, net)] == [3]
    assert await hover_text(client, net, 1, 2) == ""
    edit_cell(client, nb, first, imports + "\nx = (")  # a half-typed cell: nothing traced, no FXS402
    edit_cell(client, nb, net, "# one\n# two\n# three\n" + held)
    await wait_until(lambda: diagnostics(client, net) == [("FXS101", line + 3, start, end)], what="kept, moved")
    assert not any(d.code == "FXS402" for ds in client.diagnostics.values() for d in ds)

    hold.unlink()
    edit_cell(client, nb, first, imports)
    await wait_until(lambda: diagnostics(client, net) == [("FXS101", line + 3, start, end)], what="re-traced")
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and any("tracing" in t for _, t in await lens_titles(client, net)):
        await asyncio.sleep(0.2)
    titles = await lens_titles(client, net)
    assert [n for n, _ in titles] == [4] and not any("tracing" in t for _, t in titles), titles
    assert diagnostics(client, net) == [("FXS101", line + 3, start, end)]
    assert not any(d.code == "FXS402" for ds in client.diagnostics.values() for d in ds)
