"""Helpers for the language-server tests: workspaces built from the model corpus, a pytest-lsp
client that records every publishDiagnostics (with its version), waiting helpers, LSP edits
applied to text, and the server's process tree."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features
from pygls.protocol import default_converter

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
SERVER = [sys.executable, "-m", "fxscope", "serve"]

VSCODE = "visual-studio-code"
NEOVIM = "neovim@v0.11"

#: A model with non-ASCII text before the offending expression on the same line.
UNICODE_MODEL = '''"""Non-ASCII source: columns are code points in the store, UTF-16 units or bytes on the wire."""

import torch
from torch import nn


class Grüße(nn.Module):
    """Begrüßung 😀."""

    def forward(self, x):
        y = x * 2
        if "é😀" != "" and y.sum() > 0:  # FXS101 unicode
            y = y + 1
        return y
'''


def uri(path: Path) -> str:
    return from_fs_path(str(path))


def make_workspace(root: Path, files: Sequence[str], *, pyproject: str | None = None,
                   extra: dict[str, str] | None = None) -> Path:
    """A workspace at ``root`` with corpus ``files`` copied in, a pyproject.toml and ``extra`` files."""
    root.mkdir(parents=True, exist_ok=True)
    for name in files:
        shutil.copy(MODELS_DIR / name, root / name)
    (root / "pyproject.toml").write_text(pyproject if pyproject is not None else "[tool.fxscope]\ntimeout = 20\n")
    for name, text in (extra or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _record_publish(client: LanguageClient, params: types.PublishDiagnosticsParams) -> None:
    client.diagnostics[params.uri] = params.diagnostics
    client.published.append(params)  # type: ignore[attr-defined]


def _record_registration(client: LanguageClient, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)  # type: ignore[attr-defined]


def _count_lens_refresh(client: LanguageClient, params: None) -> None:
    client.lens_refreshes += 1  # type: ignore[attr-defined]


def _ignore_hint_refresh(client: LanguageClient, params: None) -> None:
    pass


async def wait_startup(client: LanguageClient, folders: int = 1, timeout: float = 180.0) -> None:
    """Wait until the start-up check of ``folders`` folders has ended (their $/progress ended)."""
    def ended() -> bool:
        done = sum(any(isinstance(v, types.WorkDoneProgressEnd) for v in values)
                   for values in client.progress_reports.values())
        return done >= folders

    await wait_until(ended, timeout=timeout, what="the start-up check to end")


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=default_converter)
    client.published = []  # type: ignore[attr-defined]
    client.registrations = []  # type: ignore[attr-defined]
    client.lens_refreshes = 0  # type: ignore[attr-defined]
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _record_publish
    features[types.CLIENT_REGISTER_CAPABILITY] = _record_registration
    features[types.WORKSPACE_CODE_LENS_REFRESH] = _count_lens_refresh
    features[types.WORKSPACE_INLAY_HINT_REFRESH] = _ignore_hint_refresh
    register_lsp_features(client, features)
    return client


def capabilities(name: str) -> types.ClientCapabilities:
    return client_capabilities(name)


async def initialize(client: LanguageClient, roots: Sequence[Path], caps: str | types.ClientCapabilities,
                     options: dict[str, Any] | None = None) -> types.InitializeResult:
    """initialize + initialized for the workspace folders ``roots``."""
    if isinstance(caps, str):
        caps = capabilities(caps)
    folders = [types.WorkspaceFolder(uri=uri(r), name=r.name) for r in roots]
    return await client.initialize_session(types.InitializeParams(
        capabilities=caps, root_uri=uri(roots[0]) if roots else None, workspace_folders=folders,
        initialization_options=options or {}))


def open_doc(client: LanguageClient, path: Path, version: int = 1) -> str:
    text = path.read_text(encoding="utf-8")
    client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
        uri=uri(path), language_id="python", version=version, text=text)))
    return text


def change_doc(client: LanguageClient, path: Path, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri(path), version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def wait_until(predicate: Callable[[], Any], timeout: float = 120.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


def codes(diagnostics: Sequence[types.Diagnostic]) -> list[tuple[str, int]]:
    return sorted((str(d.code), d.range.start.line + 1) for d in diagnostics)


def marker_line(text: str, tag: str) -> int:
    hits = [i for i, line in enumerate(text.split("\n"), 1) if line.rstrip().endswith(f"# {tag}")]
    assert len(hits) == 1, (tag, hits)
    return hits[0]


def expected_range(text: str, tag: str, expr: str, encoding: str = "utf-16") -> types.Range:
    """The LSP range of ``expr`` on the line marked ``# tag``, computed independently of the server."""
    line = marker_line(text, tag)
    content = text.split("\n")[line - 1]
    code = content[: content.rindex(f"# {tag}")]
    start = code.index(expr)
    codec, width = {"utf-16": ("utf-16-le", 2), "utf-8": ("utf-8", 1), "utf-32": ("utf-32-le", 4)}[encoding]

    def units(s: str) -> int:
        return len(s.encode(codec)) // width

    return types.Range(start=types.Position(line=line - 1, character=units(code[:start])),
                       end=types.Position(line=line - 1, character=units(code[: start + len(expr)])))


def apply_edits(text: str, edits: Sequence[types.TextEdit], encoding: str = "utf-16") -> str:
    """``text`` with LSP ``edits`` applied (positions in ``encoding``), the way an editor does."""
    lines = text.split("\n")
    codec, width = {"utf-16": ("utf-16-le", 2), "utf-8": ("utf-8", 1), "utf-32": ("utf-32-le", 4)}[encoding]

    def offset(pos: types.Position) -> int:
        if pos.line >= len(lines):
            return len(text)
        base = sum(len(l) + 1 for l in lines[: pos.line])
        line, units, i = lines[pos.line], 0, 0
        while i < len(line) and units < pos.character:
            units += len(line[i].encode(codec)) // width
            i += 1
        return base + i

    out = text
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        out = out[: offset(e.range.start)] + e.new_text + out[offset(e.range.end):]
    return out


def workspace_edit_files(edit: types.WorkspaceEdit) -> dict[str, list[types.TextEdit]]:
    """URI -> text edits of a WorkspaceEdit (``changes`` or ``documentChanges``)."""
    out: dict[str, list[types.TextEdit]] = {}
    for u, es in (edit.changes or {}).items():
        out.setdefault(u, []).extend(es)
    for change in edit.document_changes or ():
        if isinstance(change, types.TextDocumentEdit):
            out.setdefault(change.text_document.uri, []).extend(change.edits)
        elif isinstance(change, types.CreateFile):
            out.setdefault(change.uri, [])
    return out


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out: set[int] = set()
    todo = [pid]
    while todo:
        for c in children.get(todo.pop(), ()):
            if c not in out:
                out.add(c)
                todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except OSError:
        return False


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line or environment-free cwd mention ``text``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if (text in cmd or cwd.startswith(text)) and alive(int(entry)):
            out.append(int(entry))
    return out
