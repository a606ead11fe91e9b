"""Zero-config in the editor: a class fxscope built from a README example says so in its hover and
code lens, and the code action *Create an fxscope target* pins that build as a factory target
that ``fxscope check`` then uses."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from engine_support import cli_env, run_check
from lsp_support import VSCODE, apply_edits, initialize, make_workspace, uri, wait_startup, workspace_edit_files

pytestmark = pytest.mark.requires_torch

VIT = '''from torch import nn


class ViT(nn.Module):
    def __init__(self, *, image_size, dim, depth):
        super().__init__()
        assert image_size % 8 == 0, "image_size must be a multiple of 8"
        self.blocks = nn.Sequential(*[nn.Linear(dim, dim) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(x)
'''

README = '''# vit

```python
from vit import ViT

model = ViT(image_size=32, dim=8, depth=2)
```
'''


async def _lens(client: LanguageClient, path: Path) -> dict[int, types.Command]:
    got = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path))))
    return {lens.range.start.line: lens.command for lens in got or [] if lens.command is not None}


async def test_provenance_in_hover_and_lens_and_the_action_pins_the_build(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", [], extra={"vit.py": VIT, "README.md": README},
                          pyproject='[project]\nname = "demo"\n\n[tool.fxscope]\ntimeout = 20\n')
    await initialize(client, [root], VSCODE)
    await wait_startup(client)
    path = root / "vit.py"
    readme_line = README.split("\n").index("model = ViT(image_size=32, dim=8, depth=2)") + 1
    line0 = VIT.split("\n").index("class ViT(nn.Module):")

    titles: dict[int, types.Command] = {}
    for _ in range(600):  # the lens says how the class was built once its trace is stored
        titles = await _lens(client, path)
        if line0 in titles and titles[line0].title.startswith("traced"):
            break
        await asyncio.sleep(0.2)
    assert titles[line0].title.startswith("traced · ") and \
        titles[line0].title.endswith(f" · built as in README.md:{readme_line}"), titles[line0].title

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        position=types.Position(line=line0, character=len("class V"))))
    assert hover is not None
    assert f"built as `ViT(image_size=32, dim=8, depth=2)` as in README.md:{readme_line}" in hover.contents.value

    got = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri(path)),
        range=types.Range(start=types.Position(line=line0, character=0), end=types.Position(line=line0, character=0)),
        context=types.CodeActionContext(diagnostics=[])))
    actions = {a.title: a for a in got or []}
    title = f"Create an fxscope target for `ViT` (built as in README.md:{readme_line})"
    assert title in actions, list(actions)
    for file_uri, edits in workspace_edit_files(actions[title].edit).items():
        file = Path(file_uri.removeprefix("file://"))
        file.write_text(apply_edits(file.read_text() if file.exists() else "", edits))
    data = tomllib.loads((root / "pyproject.toml").read_text())
    assert data["project"]["name"] == "demo" and data["tool"]["fxscope"]["timeout"] == 20
    assert data["tool"]["fxscope"]["targets"]["vit"] == {"factory": "fxscope_targets:build_vit"}
    assert "return ViT(image_size=32, dim=8, depth=2)" in (root / "fxscope_targets.py").read_text()

    run = run_check(root)  # the real CLI uses the pinned target
    assert run.targets["vit"]["kind"] == "factory" and run.targets["vit"]["status"] == "traced"
    assert run.targets["vit.py::ViT"]["status"] == "skipped"  # the factory speaks for the class now
    again = subprocess.run([sys.executable, "-m", "fxscope", "init"], cwd=root, env=cli_env(),
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "nothing new to write" in again.stdout, again.stdout + again.stderr
