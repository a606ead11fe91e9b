"""Diagnostics end to end: a real server over stdio, VS Code's capabilities (push, UTF-16) and
Neovim's (pull, UTF-8), on workspaces built from the model corpus."""

from __future__ import annotations

import asyncio

import time

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import (NEOVIM, UNICODE_MODEL, VSCODE, change_doc, expected_range, initialize,
                         make_workspace, open_doc, uri, wait_until)

pytestmark = pytest.mark.requires_torch

FILES = ["control_flow.py", "length.py", "python_number.py", "shared_class.py", "unused.py", "helpers.py",
         "uses_helpers.py", "depth.py"]

# (file, marker tag, offending expression, code)
EXPECTED = [
    ("control_flow.py", "FXS101 if", "x.sum() > 0", "FXS101"),
    ("control_flow.py", "FXS101 while", "x.abs().max() > 1", "FXS101"),
    ("control_flow.py", "FXS101 bool", "bool(x.any())", "FXS101"),
    ("length.py", "FXS103 len", "len(x)", "FXS103"),
    ("length.py", "FXS103 shape", "len(x.shape)", "FXS103"),
    ("length.py", "FXS103 inner", "len(x)", "FXS103"),
    ("python_number.py", "FXS104 int", "int(x.sum())", "FXS104"),
    ("python_number.py", "FXS104 range", "range(x.size(0))", "FXS104"),
    ("shared_class.py", "FXS101 causal", "x.size(1) > 1", "FXS101"),
    ("unused.py", "FXS301 spare", "self.spare", "FXS301"),
    ("unused.py", "FXS302 bias", "self.bias", "FXS302"),
    ("helpers.py", "FXS101 helper", "x.abs().max() > 1", "FXS101"),
    ("depth.py", "FXS101 depth3", "x.mean() > 0", "FXS101"),
    ("depth.py", "FXS103 depth2", "len(x)", "FXS103"),
    ("unicode_model.py", "FXS101 unicode", "y.sum() > 0", "FXS101"),
]


def _find(diags, code, rng):
    return [d for d in diags if d.code == code and d.range == rng]


@pytest.mark.slow
async def test_push_diagnostics_vscode_utf16(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", FILES, extra={"unicode_model.py": UNICODE_MODEL})
    result = await initialize(client, [root], VSCODE)
    assert result.capabilities.position_encoding in (None, types.PositionEncodingKind.Utf16)
    texts = {f: (root / f).read_text(encoding="utf-8") for f in {e[0] for e in EXPECTED}}

    def all_there():
        for file, tag, expr, code in EXPECTED:
            if not _find(client.diagnostics.get(uri(root / file), []), code, expected_range(texts[file], tag, expr)):
                return False
        return True

    # nothing is open: files get diagnostics from the start-up check
    await wait_until(all_there, what="diagnostics for every expected finding")
    for file, tag, expr, code in EXPECTED:
        (d,) = _find(client.diagnostics[uri(root / file)], code, expected_range(texts[file], tag, expr))
        assert d.source == "fxscope"
        assert d.code_description is not None and d.code_description.href.startswith("https://")
        assert d.severity == {"FXS301": types.DiagnosticSeverity.Hint,
                              "FXS302": types.DiagnosticSeverity.Warning}.get(code, types.DiagnosticSeverity.Error)
        assert (list(d.tags or []) == [types.DiagnosticTag.Unnecessary]) == (code in ("FXS301", "FXS302"))
        assert "hint:" in d.message
    # the non-ASCII line: UTF-16 units differ from code points there
    line = texts["unicode_model.py"].split("\n")[expected_range(texts["unicode_model.py"], "FXS101 unicode", "y.sum() > 0").start.line]
    assert expected_range(texts["unicode_model.py"], "FXS101 unicode", "y.sum() > 0").start.character == line.index("y.sum()") + 1
    # one finding in three module instances: the other scopes are related information
    def shared_related():
        (shared,) = [d for d in client.diagnostics[uri(root / "shared_class.py")] if d.code == "FXS101"]
        return [r.message for r in shared.related_information or ()]

    await wait_until(lambda: sum("blocks." in m for m in shared_related()) >= 3, what="every instance's scope")
    related = shared_related()
    assert any("blocks.1.attn" in m for m in related) and any("blocks.2.attn" in m for m in related), related
    # a finding in a helper file seen from a model: the call chain is related information
    (helper,) = [d for d in client.diagnostics[uri(root / "helpers.py")] if d.code == "FXS101"]
    assert any(r.location.uri == uri(root / "uses_helpers.py") for r in helper.related_information or ()), \
        helper.related_information
    # no diagnostics for clean files
    assert not client.diagnostics.get(uri(root / "pyproject.toml"))


async def test_pull_diagnostics_neovim_utf8(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py"], extra={"unicode_model.py": UNICODE_MODEL})
    result = await initialize(client, [root], NEOVIM)
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf8
    assert result.capabilities.diagnostic_provider is not None
    path = root / "unicode_model.py"
    text = open_doc(client, path)
    # Neovim 0.11 cannot be told to refresh: the pull answers once the results are in
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    want = expected_range(text, "FXS101 unicode", "y.sum() > 0", "utf-8")
    assert [d.range for d in report.items if d.code == "FXS101"] == [want]
    assert want.start.character != expected_range(text, "FXS101 unicode", "y.sum() > 0", "utf-16").start.character
    again = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)), previous_result_id=report.result_id))
    assert again.kind == "unchanged" and again.result_id == report.result_id
    # the closed file's findings come through workspace diagnostics: a workspace pull answers with what
    # is known (the background trace of length.py may still run), so the client pulls again, as
    # Neovim does
    by_uri: dict[str, types.WorkspaceDocumentDiagnosticReport] = {}
    deadline = time.monotonic() + 120
    while uri(root / "length.py") not in by_uri and time.monotonic() < deadline:
        ws = await client.workspace_diagnostic_async(types.WorkspaceDiagnosticParams(previous_result_ids=[]))
        by_uri = {item.uri: item for item in ws.items}
        await asyncio.sleep(0.2)
    assert uri(root / "length.py") in by_uri
    assert {d.code for d in by_uri[uri(root / "length.py")].items} == {"FXS103"}
    assert not client.diagnostics  # a pull client gets nothing pushed


async def test_burst_of_edits_ends_with_the_final_text(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py"])
    await initialize(client, [root], VSCODE)
    path = root / "length.py"
    original = open_doc(client, path, version=1)
    await wait_until(lambda: any(d.code == "FXS103" for d in client.diagnostics.get(uri(path), [])),
                     what="the first diagnostics")
    lines = original.split("\n")
    target = next(i for i, l in enumerate(lines) if l.rstrip().endswith("# FXS103 len"))
    text = original
    for version in range(2, 22):
        # each edit moves the offending line down by one more blank line
        edited = lines[:target] + [""] * (version - 1) + lines[target:]
        text = "\n".join(edited)
        change_doc(client, path, version, text)
    final_line = target + 20  # 0-based line of `n = len(x)` in the final text

    def final():
        pubs = [p for p in client.published if p.uri == uri(path)]
        return pubs and pubs[-1].version == 21 and any(
            d.code == "FXS103" and d.range.start.line == final_line for d in pubs[-1].diagnostics)

    await wait_until(final, what="diagnostics for version 21")
    versions = [p.version for p in client.published if p.uri == uri(path) and p.version is not None]
    assert versions == sorted(versions), versions  # never an older version after a newer one


async def test_files_changed_outside_the_editor(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py", "clean.py"])
    await initialize(client, [root], VSCODE)
    path = root / "clean.py"
    await wait_until(lambda: client.diagnostics.get(uri(root / "length.py")), what="start-up diagnostics")
    # VS Code offers didChangeWatchedFiles: the server registers for Python files and pyproject.toml
    await wait_until(lambda: client.registrations, what="the file-watching registration")
    (reg,) = client.registrations
    assert reg.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    assert {w["globPattern"] for w in reg.register_options["watchers"]} == {"**/*.py", "**/*.ipynb", "**/pyproject.toml"}
    # a generator (not the editor) rewrites a closed file: watchdog notices, the file is re-traced
    text = path.read_text()
    path.write_text(text.replace("        return self.net(x)", "        return self.net(x) / len(x)", 1))
    await wait_until(lambda: any(d.code == "FXS103" for d in client.diagnostics.get(uri(path), [])),
                     what="the new finding in the rewritten file")
    # and back: the finding goes away (also announced the way a client would)
    path.write_text(text)
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=uri(path), type=types.FileChangeType.Changed)]))
    await wait_until(lambda: not client.diagnostics.get(uri(path)), what="the finding to be cleared")
