"""The VS Code extension without VS Code: its manifest, the README's VS Code section, and its
own unit tests and lint under Node (when `make vscode` has installed its dependencies)."""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from editor_support import REPO, readme_blocks
from vscode_support import VSCODE, have_node_modules, node

MANIFEST = json.loads((VSCODE / "package.json").read_text())
SETTINGS = MANIFEST["contributes"]["configuration"]["properties"]
needs_npm = pytest.mark.skipif(node() is None or not have_node_modules(),
                               reason="Node or clients/vscode/node_modules missing (run `make vscode`)")


def test_manifest_contributes_settings_commands_and_trust() -> None:
    assert set(SETTINGS) == {"fxscope.enable", "fxscope.interpreter", "fxscope.run", "fxscope.debounce",
                             "fxscope.timeout", "fxscope.workers", "fxscope.codeLens", "fxscope.inlayHints",
                             "fxscope.watch", "fxscope.logLevel", "fxscope.trace.server"}
    commands = {c["command"]: c["title"] for c in MANIFEST["contributes"]["commands"]}
    assert commands["fxscope.restartServer"] == "Restart Server"
    assert commands["fxscope.selectInterpreter"] == "Select Interpreter"
    assert commands["fxscope.showGraph"] == "Show FX Graph"
    assert commands["fxscope.retrace"] == "Re-trace Workspace"
    assert commands["fxscope.clearCache"] == "Clear Cache"
    trust = MANIFEST["capabilities"]["untrustedWorkspaces"]
    assert trust["supported"] == "limited" and "fxscope.interpreter" in trust["restrictedConfigurations"]
    assert MANIFEST["main"] == "./dist/extension.js"
    assert "@vscode/vsce" in MANIFEST["devDependencies"] and "esbuild" in MANIFEST["devDependencies"]
    assert (VSCODE / "package-lock.json").exists(), "npm ci needs the committed lockfile"


def test_every_server_option_is_a_setting() -> None:
    """Each option the server accepts (lsp/options.py) is a VS Code setting with the server's default."""
    import dataclasses

    from fxscope.lsp.options import ServerOptions

    names = {"enable": "enable", "debounce_ms": "debounce", "trace_on": "run", "workers": "workers",
             "timeout": "timeout", "watch": "watch", "code_lens": "codeLens", "inlay_hints": "inlayHints",
             "log_level": "logLevel"}
    fields = {f.name for f in dataclasses.fields(ServerOptions)} - {"given"}
    assert fields == set(names), "a new server option needs a setting (and a name here)"
    defaults = ServerOptions()
    for field, key in names.items():
        assert f"fxscope.{key}" in SETTINGS, key
        if getattr(defaults, field) is not None and field not in ("trace_on",):
            assert SETTINGS[f"fxscope.{key}"]["default"] == getattr(defaults, field), key
    assert SETTINGS["fxscope.logLevel"]["enum"] == ["error", "warning", "info", "debug"]


def test_package_ships_icon_and_license() -> None:
    assert MANIFEST["icon"] == "images/icon.png"
    icon = (VSCODE / MANIFEST["icon"]).read_bytes()
    assert icon[:8] == b"\x89PNG\r\n\x1a\n" and icon[16:24] == (128).to_bytes(4, "big") * 2
    license_text = (VSCODE / "LICENSE").read_text()
    assert "Apache License" in license_text and "Version 2.0" in license_text
    assert MANIFEST["license"] == "Apache-2.0"
    assert "--skip-license" not in MANIFEST["scripts"]["package"]
    ignore = (VSCODE / ".vscodeignore").read_text().split()
    assert "!LICENSE" in ignore and "!images/icon.png" in ignore


def test_readme_vscode_section_matches_the_extension() -> None:
    (build,) = readme_blocks("VS Code", "sh")
    make_targets = re.findall(r"^make (\S+)", build, re.MULTILINE)
    makefile = (REPO / "Makefile").read_text()
    assert make_targets == ["vscode-package"]
    for target in make_targets + ["vscode-test", "vscode-e2e", "vscode"]:
        assert re.search(rf"^{re.escape(target)}:", makefile, re.MULTILINE), target
    assert "code --install-extension clients/vscode/dist/fxscope.vsix" in build
    assert "--out dist/fxscope.vsix" in MANIFEST["scripts"]["package"]

    (settings,) = readme_blocks("VS Code", "json")
    shown = json.loads(settings)
    assert set(shown) == set(SETTINGS), "the README shows every setting the extension contributes"
    for key, value in shown.items():
        if key != "fxscope.interpreter":
            assert value == SETTINGS[key]["default"], key
        else:
            assert SETTINGS[key]["type"] == "array"
    assert SETTINGS["fxscope.run"]["enum"] == ["onType", "onSave"]


@needs_npm
def test_extension_unit_tests_and_lint_pass() -> None:
    """Interpreter choice, settings mapping, targets, status text and the graph model under
    node:test; the committed renderer bundle matches its source."""
    proc = subprocess.run(["npm", "test"], cwd=VSCODE, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert re.search(r"^# fail 0$", proc.stdout, re.MULTILINE) and re.search(r"^# pass [1-9]\d*$", proc.stdout, re.MULTILINE)
    lint = subprocess.run(["npm", "run", "lint"], cwd=VSCODE, capture_output=True, text=True, timeout=600)
    assert lint.returncode == 0, lint.stdout[-4000:] + lint.stderr[-2000:]
