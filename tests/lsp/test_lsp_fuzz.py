"""Fuzz: hypothesis-driven sequences of didOpen / didChange (random incremental edits) / didSave /
hovers / didClose against the real server; it keeps answering, and its final diagnostics for a
document equal those of a fresh ``fxscope check`` of the final text. When the final text does not
parse, the document keeps the results of its last text that did (never an FXS402: the editor shows
the syntax error), each on a line with the text of a line that produced it."""

from __future__ import annotations

import ast
import asyncio
import json
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS / "lsp"))

from lsp_support import SERVER, VSCODE, initialize, make_client, uri  # noqa: E402

from engine_support import check_command, cli_env  # noqa: E402

pytestmark = [pytest.mark.requires_torch, pytest.mark.fuzz, pytest.mark.slow]

BASE = """import torch
from torch import nn


class Fuzzed(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return y
"""

#: Pieces of text an edit inserts: untraceable constructs, fixes, garbage, newlines.
PIECES = [
    "\n        if y.sum() > 0:\n            y = y + 1",
    "\n        n = len(y)",
    "\n        for row in y:\n            pass",
    "\n        y = y * 2",
    "\n        k = int(y.mean())",
    "\n        y[0] = 1",
    "torch.relu(y)", "y", " ", "\n", "(", ")", ":", "x", "#", "é😀",
]


class _Server:
    """One real server for every example, driven from a private event loop thread."""

    def __init__(self, root: Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = make_client()
        self.run(self.client.start_io(*SERVER))
        # no wait for the start-up check: the first example's edits land while it runs
        self.run(initialize(self.client, [root], VSCODE))

    def run(self, coro, timeout: float = 300):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        try:
            self.run(self.client.shutdown_session(), timeout=60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 30\n")
    srv = _Server(root)
    srv.root = root
    yield srv
    srv.close()


def _position(text: str, offset: int) -> types.Position:
    before = text[:offset]
    line = before.count("\n")
    column = len(before) - (before.rfind("\n") + 1)
    return types.Position(line=line, character=len(before[len(before) - column:].encode("utf-16-le")) // 2)


@st.composite
def edits(draw):
    """A list of (start, end, insertion) edits and where saves and hovers happen."""
    steps = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["edit", "edit", "edit", "save", "hover"]))
        steps.append((kind, draw(st.floats(0, 1)), draw(st.floats(0, 0.2)), draw(st.sampled_from(PIECES))))
    return steps


def _parses(text: str) -> bool:
    """Whether ``text`` parses, as the server decides it."""
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def _fresh_check(text: str, name: str, tmp: Path) -> set[tuple[str, int]]:
    root = tmp / uuid.uuid4().hex
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 30\n")
    (root / name).write_text(text, encoding="utf-8")
    proc = subprocess.run(check_command(), cwd=root, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    out = set()
    for f in report["findings"]:
        where = f["anchor"] if not f["file"].endswith(".py") or f["file"].startswith("/") and f.get("anchor") else f
        if f["severity"] in ("error", "warning") and where["file"] == name:
            out.add((f["code"], where["line"]))
    return out


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(steps=edits())
def test_random_edit_sequences_end_in_the_diagnostics_of_a_fresh_check(server, steps, tmp_path_factory):
    client, root = server.client, server.root
    name = f"fuzz_{uuid.uuid4().hex[:8]}.py"
    path = root / name
    path.write_text(BASE)
    text, version = BASE, 1
    parsed = text  # the last text that parsed
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri(path), language_id="python", version=version, text=text)))
    for kind, where, span, piece in steps:
        start = int(where * len(text))
        end = min(len(text), start + int(span * len(text)))
        if kind == "edit":
            version += 1
            change = types.TextDocumentContentChangePartial(
                range=types.Range(start=_position(text, start), end=_position(text, end)), text=piece)
            text = text[:start] + piece + text[end:]
            parsed = text if _parses(text) else parsed
            client.text_document_did_change(types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=version),
                content_changes=[change]))
        elif kind == "save":
            path.write_text(text, encoding="utf-8")
            client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=uri(path)), text=text))
        else:
            server.run(client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri(path)), position=_position(text, start))), 60)

    async def settled() -> set[tuple[str, int]]:
        """The pulled diagnostics once the server is idle and they stop changing (the debounce
        and the re-trace of the last edit are over)."""
        seen: list[set[tuple[str, int]]] = []
        for _ in range(600):
            await asyncio.sleep(0.4)
            status = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="fxscope.status"))
            folder = status["folders"][0]
            report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri(path))))
            now = {(str(d.code), d.range.start.line + 1) for d in report.items
                   if d.severity in (types.DiagnosticSeverity.Error, types.DiagnosticSeverity.Warning)}
            seen = seen + [now] if folder["running"] == 0 and folder["queued"] == 0 else []
            if len(seen) >= 4 and all(x == now for x in seen[-4:]):
                return now
        raise AssertionError("the diagnostics never settled")

    got = server.run(settled())
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    path.unlink()
    if _parses(text):
        assert got == _fresh_check(text, name, tmp_path_factory.mktemp("fresh")), text
        return
    fresh = _fresh_check(parsed, name, tmp_path_factory.mktemp("fresh"))
    lines, before = text.split("\n"), parsed.split("\n")
    assert not any(code == "FXS402" for code, _ in got), (text, got)
    for code, line in got:  # each on a line with the text of a line that produced it
        assert lines[line - 1] in {before[at - 1] for c, at in fresh if c == code}, (text, parsed, got, fresh)
