"""The editor sees whether model code ran sandboxed: the real server's ``fxscope.status`` gives each
folder's ``sandbox`` (``on``, ``kind``, ``detail``), and a write the sandbox refused is an FXS408
diagnostic at the offending line, not the model's bug."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from fxscope.worker.sandbox import landlock_abi
from lsp_support import VSCODE, initialize, make_workspace, open_doc, uri, wait_until

pytestmark = [pytest.mark.requires_torch,
              pytest.mark.skipif(landlock_abi() < 4, reason="needs Landlock with TCP rules (ABI 4, Linux 6.7)")]

WRITER = '''from pathlib import Path

from torch import nn

Path(__file__).with_name("written.txt").write_text("x")


class Model(nn.Module):
    def forward(self, x):
        return x + 1
'''
WRITE_LINE0 = 4


async def test_status_says_whether_each_folder_is_sandboxed_and_a_refusal_is_fxs408(client: LanguageClient,
                                                                                  tmp_path: Path) -> None:
    boxed = make_workspace(tmp_path / "boxed", [], extra={"writer.py": WRITER})
    trusted = make_workspace(tmp_path / "trusted", [], extra={"writer.py": WRITER},
                             pyproject="[tool.fxscope]\ntimeout = 20\nsandbox = false\n")
    await initialize(client, [boxed, trusted], VSCODE)
    open_doc(client, boxed / "writer.py")
    open_doc(client, trusted / "writer.py")
    await wait_until(lambda: any(d.code == "FXS408" for d in client.diagnostics.get(uri(boxed / "writer.py"), [])),
                     what="FXS408 in the sandboxed folder")
    await wait_until(lambda: (trusted / "written.txt").exists(), what="the unsandboxed folder's write")
    [diagnostic] = client.diagnostics[uri(boxed / "writer.py")]
    assert diagnostic.range.start.line == WRITE_LINE0
    assert "fxscope's sandbox blocked writing" in diagnostic.message and "--no-sandbox" in diagnostic.message
    assert not (boxed / "written.txt").exists()

    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    folders = {Path(f["root"]): f["sandbox"] for f in status["folders"]}
    assert set(folders[boxed]) == {"on", "kind", "detail"}
    assert folders[boxed]["on"] is True and folders[boxed]["kind"] == "landlock"
    assert folders[trusted] == {"on": False, "kind": "none",
                                "detail": "off by request (sandbox = false in [tool.fxscope], or --no-sandbox)"}
