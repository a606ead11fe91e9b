"""A line of file F that several targets reach (F's own class, and a class of another file that
contains it) is described by F's own target first: the diagnostic's message (which names the build
fxscope used) and scopes are those of F's class, the other target is only "also in ..."; the hover
of a traced line lists F's target first."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import MODELS_DIR, VSCODE, initialize, make_workspace, marker_line, open_doc, uri, wait_startup, wait_until

pytestmark = pytest.mark.requires_torch

FILES = ("block.py", "a_wrap.py")


def _workspace(tmp_path):
    extra = {name: (MODELS_DIR / "shared_block" / name).read_text(encoding="utf-8") for name in FILES}
    return make_workspace(tmp_path / "ws", [], extra=extra, pyproject='[project]\nname = "demo"\n')


async def test_a_shared_line_speaks_for_its_own_files_target(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    await initialize(client, [root], VSCODE)
    block = root / "block.py"
    text = open_doc(client, block)
    open_doc(client, root / "a_wrap.py")
    await wait_startup(client)
    own = marker_line(text, "FXS101 own") - 1

    def found() -> list[types.Diagnostic]:
        return [d for d in client.diagnostics.get(uri(block), []) if d.code == "FXS101" and d.range.start.line == own]

    [diag] = await wait_until(found, what="the FXS101 of block.py")
    # both targets saw it: the one diagnostic is Block's (built from its defaults), not the wrapper's
    # invented build, which is mentioned only as another place it was seen
    assert "Wrapper" not in diag.message.split("\nhint:")[0], diag.message
    assert "invented" not in diag.message, diag.message
    assert diag.data["target"] in ("block.py::Block", "block.py::Gate"), diag.data
    also = [r.message for r in diag.related_information or []]
    assert any("(target a_wrap.py::Wrapper)" in m for m in also), also

    # the hover of a traced line of block.py: block.py's target first, the wrapper's after it
    line = marker_line(text, "NODES own") - 1
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(block)),
        position=types.Position(line=line, character=text.split("\n")[line].index("relu"))))
    assert hover is not None
    value = hover.contents.value
    assert "target `block.py::Block`" in value and "target `a_wrap.py::Wrapper`" in value, value
    assert value.index("target `block.py::Block`") < value.index("target `a_wrap.py::Wrapper`"), value
