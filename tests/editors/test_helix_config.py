"""Helix: clients/helix/languages.toml (and the README's copy of it) is valid for Helix 25.07's
languages.toml schema, its command exists, and the server it starts, driven the way Helix drives
it (its client capabilities, ``config`` as initializationOptions and workspace/configuration),
publishes fxscope's diagnostics and the class inlay hints the config turns on.

Helix itself is not installable here; the schema below follows helix-core/src/syntax/config.rs
(LanguageConfiguration, deny_unknown_fields; LanguageServerConfiguration) of Helix 25.07.1.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types as t
from pygls.lsp.client import LanguageClient

from editor_support import (CLIENTS, copy_examples, editor_env, readme_blocks, require_server)

pytestmark = pytest.mark.requires_torch

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

LANGUAGES_TOML = CLIENTS / "helix" / "languages.toml"

# Keys of a [[language]] table (kebab-case) and of a [language-server.NAME] table.
LANGUAGE_KEYS = {
    "name", "language-id", "scope", "file-types", "shebangs", "roots", "comment-token",
    "comment-tokens", "block-comment-tokens", "text-width", "soft-wrap", "auto-format",
    "formatter", "path-completion", "diagnostic-severity", "grammar", "injection-regex",
    "language-servers", "indent", "debugger", "auto-pairs", "rulers", "workspace-lsp-roots",
    "persistent-diagnostic-sources",
}
SERVER_KEYS = {"command": str, "args": list, "environment": dict, "config": dict, "timeout": int,
               "required-root-patterns": list}
FEATURES = {
    "format", "goto-declaration", "goto-definition", "goto-type-definition", "goto-reference",
    "goto-implementation", "signature-help", "hover", "document-highlight", "completion",
    "code-action", "workspace-command", "document-symbols", "workspace-symbols", "diagnostics",
    "rename-symbol", "inlay-hints", "document-colors",
}
# Helix 25.07's built-in Python servers (its languages.toml: [language-server] and python's list).
HELIX_PYTHON_DEFAULTS = ["ty", "ruff", "jedi", "pylsp"]
HELIX_BUILTIN_SERVERS = {"ty", "ruff", "jedi", "pylsp", "pyright", "basedpyright", "pyrefly", "zuban"}

# The parts of Helix 25.07.1's ClientCapabilities (helix-lsp/src/client.rs) the server can act on.
HELIX_CAPABILITIES = t.ClientCapabilities(
    workspace=t.WorkspaceClientCapabilities(
        configuration=True, workspace_folders=True, apply_edit=True,
        did_change_configuration=t.DidChangeConfigurationClientCapabilities(dynamic_registration=False),
        execute_command=t.ExecuteCommandClientCapabilities(dynamic_registration=False),
        inlay_hint=t.InlayHintWorkspaceClientCapabilities(refresh_support=False),
        workspace_edit=t.WorkspaceEditClientCapabilities(document_changes=True),
        did_change_watched_files=t.DidChangeWatchedFilesClientCapabilities(
            dynamic_registration=True, relative_pattern_support=False),
    ),
    text_document=t.TextDocumentClientCapabilities(
        hover=t.HoverClientCapabilities(content_format=[t.MarkupKind.Markdown]),
        code_action=t.CodeActionClientCapabilities(
            code_action_literal_support=t.ClientCodeActionLiteralOptions(
                code_action_kind=t.ClientCodeActionKindOptions(value_set=["", "quickfix", "source"])),
            is_preferred_support=True, data_support=True),
        publish_diagnostics=t.PublishDiagnosticsClientCapabilities(
            version_support=True,
            tag_support=t.ClientDiagnosticsTagOptions(
                value_set=[t.DiagnosticTag.Unnecessary, t.DiagnosticTag.Deprecated])),
        inlay_hint=t.InlayHintClientCapabilities(dynamic_registration=False),
    ),
    window=t.WindowClientCapabilities(work_done_progress=True),
    general=t.GeneralClientCapabilities(position_encodings=[
        t.PositionEncodingKind.Utf8, t.PositionEncodingKind.Utf32, t.PositionEncodingKind.Utf16]),
)


def _shipped() -> dict[str, Any]:
    return tomllib.loads(LANGUAGES_TOML.read_text(encoding="utf-8"))


def test_languages_toml_follows_helix_schema() -> None:
    doc = _shipped()
    assert set(doc) <= {"language", "language-server", "grammar", "use-grammars"}, set(doc)
    servers = doc["language-server"]
    fxscope = servers["fxscope"]
    assert set(fxscope) <= set(SERVER_KEYS), set(fxscope) - set(SERVER_KEYS)
    for key, value in fxscope.items():
        assert isinstance(value, SERVER_KEYS[key]), (key, value)
    assert all(isinstance(a, str) for a in fxscope.get("args", []))

    (python,) = [lang for lang in doc["language"] if lang["name"] == "python"]
    assert set(python) <= LANGUAGE_KEYS, set(python) - LANGUAGE_KEYS
    names = []
    for entry in python["language-servers"]:
        if isinstance(entry, dict):  # { name = "...", only-features = [...], except-features = [...] }
            assert set(entry) <= {"name", "only-features", "except-features"}, entry
            assert set(entry.get("only-features", [])) | set(entry.get("except-features", [])) <= FEATURES
            names.append(entry["name"])
        else:
            assert isinstance(entry, str)
            names.append(entry)
    # fxscope is added next to Helix's own Python servers, which keep their order.
    assert names == HELIX_PYTHON_DEFAULTS + ["fxscope"]
    assert set(names) <= HELIX_BUILTIN_SERVERS | set(servers)


def test_readme_shows_the_shipped_config() -> None:
    (block,) = readme_blocks("Helix", "toml")
    assert tomllib.loads(block) == _shipped()


def test_command_exists(tmp_path: Path) -> None:
    server = _shipped()["language-server"]["fxscope"]
    env = editor_env(tmp_path / "home")
    exe = shutil.which(server["command"], path=env["PATH"])
    assert exe, f"{server['command']!r} is not on PATH"
    require_server()
    proc = subprocess.run([exe, *server["args"], "--help"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr


def _lookup(config: Any, section: str | None) -> Any:
    """Helix's answer to one workspace/configuration item: the config, or the value at the
    dotted section path in it, or null."""
    if section:
        for part in section.split("."):
            if not isinstance(config, dict) or part not in config:
                return None
            config = config[part]
    return config


@pytest.mark.editor
async def test_server_started_the_way_helix_starts_it(tmp_path: Path) -> None:
    require_server()
    server = _shipped()["language-server"]["fxscope"]
    config = server["config"]
    ws = copy_examples(tmp_path)
    model = ws / "zoo" / "untraceable.py"
    text = model.read_text(encoding="utf-8")
    uri = model.as_uri()
    env = editor_env(tmp_path / "home")
    client = LanguageClient("helix", "25.07.1")
    diagnostics: dict[str, list[t.Diagnostic]] = {}
    messages: list[str] = []
    updated = asyncio.Event()

    @client.feature(t.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: t.PublishDiagnosticsParams) -> None:
        diagnostics[params.uri] = params.diagnostics
        updated.set()

    @client.feature(t.WORKSPACE_CONFIGURATION)
    def on_configuration(params: t.ConfigurationParams) -> list[Any]:
        return [_lookup(config, item.section) for item in params.items]

    @client.feature(t.WINDOW_LOG_MESSAGE)
    def on_log(params: t.LogMessageParams) -> None:
        messages.append(params.message)

    @client.feature(t.WINDOW_SHOW_MESSAGE)
    def on_show(params: t.ShowMessageParams) -> None:
        messages.append(params.message)

    @client.feature(t.WINDOW_WORK_DONE_PROGRESS_CREATE)
    def on_progress_create(params: t.WorkDoneProgressCreateParams) -> None:
        return None

    @client.feature(t.CLIENT_REGISTER_CAPABILITY)
    def on_register(params: t.RegistrationParams) -> None:
        return None

    exe = shutil.which(server["command"], path=env["PATH"])
    await client.start_io(exe, *server["args"], env=env, cwd=str(ws))
    try:
        result = await client.initialize_async(t.InitializeParams(
            process_id=None, root_uri=ws.as_uri(), root_path=str(ws),
            workspace_folders=[t.WorkspaceFolder(uri=ws.as_uri(), name="ws")],
            initialization_options=config, capabilities=HELIX_CAPABILITIES,
            client_info=t.ClientInfo(name="helix", version="25.07.1")))
        encoding = result.capabilities.position_encoding or t.PositionEncodingKind.Utf16
        client.initialized(t.InitializedParams())
        client.workspace_did_change_configuration(t.DidChangeConfigurationParams(settings=config))
        client.text_document_did_open(t.DidOpenTextDocumentParams(text_document=t.TextDocumentItem(
            uri=uri, language_id="python", version=0, text=text)))

        lines = text.splitlines()
        if_line = next(i for i, line in enumerate(lines) if "mask.any()" in line)
        col = lines[if_line].index("mask.any()")  # an ASCII line: the same in every encoding

        def fxs101() -> list[t.Diagnostic]:
            return [d for d in diagnostics.get(uri, []) if d.code == "FXS101" and d.range.start.line == if_line]

        async def wait_for_fxs101() -> None:
            while not fxs101():
                updated.clear()
                await updated.wait()

        await asyncio.wait_for(wait_for_fxs101(), timeout=300)
        (diag,) = fxs101()
        assert (diag.range.start.character, diag.range.end.character) == (col, col + len("mask.any()"))
        assert diag.severity == t.DiagnosticSeverity.Error and diag.source == "fxscope"
        assert encoding in (t.PositionEncodingKind.Utf8, t.PositionEncodingKind.Utf32, t.PositionEncodingKind.Utf16)

        # inlayHints = true in the config: Helix (no code lens) shows each class's summary.
        assert result.capabilities.inlay_hint_provider
        hints = await client.text_document_inlay_hint_async(t.InlayHintParams(
            text_document=t.TextDocumentIdentifier(uri=uri),
            range=t.Range(t.Position(0, 0), t.Position(len(lines), 0))))
        class_lines = {i for i, line in enumerate(lines) if line.startswith("class ")}
        assert hints and {h.position.line for h in hints} <= class_lines, hints
        assert {h.position.line for h in hints} == class_lines
        # Every key of the shipped config is one the server understands.
        assert not [m for m in messages if "unknown setting" in m or "invalid value" in m], messages
    finally:
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
