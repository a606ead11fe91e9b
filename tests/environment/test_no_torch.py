"""An interpreter with fxscope but without torch is an environment error, said once with the
install command: ``fxscope check`` exits 2 with one line, the language server sends one
window/showMessage error and reports the failed worker in ``fxscope.status``; no target gets a
finding (no FXS404 "the model code killed the process")."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig

from env_support import environment, python_without_torch

pytestmark = pytest.mark.slow

@pytest.fixture(scope="module")
def no_torch_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One interpreter without torch for this module's tests (building it takes a second)."""
    return python_without_torch(tmp_path_factory.mktemp("no-torch"))


MODELS = '''import torch
from torch import nn


class Plain(nn.Module):
    def forward(self, x):
        return x + 1


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
'''


def _workspace(root: Path) -> Path:
    root.mkdir()
    (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 20\n")
    (root / "models.py").write_text(MODELS)
    return root


def test_pool_without_torch_fails_its_start_not_its_jobs(no_torch_python: Path) -> None:
    """The worker's zygote reports that torch cannot be imported: the pool fails its start with
    TorchUnavailableError and fails queued jobs as one start-up error (never as a job's crash)."""
    from fxscope.errors import TorchUnavailableError
    from fxscope.worker.pool import WorkerPool

    with WorkerPool(python=str(no_torch_python), max_workers=1, startup_timeout=60) as pool:
        handle = pool.submit({"runner": "fxscope.worker.runner:run", "value": 1})
        result = handle.result(60)
        assert result["fault"] == "crash" and result.get("startup") is True and result.get("no_torch") is True
        assert result["message"].startswith(f"torch cannot be imported by {no_torch_python} ")
        with pytest.raises(TorchUnavailableError, match=r"pip install 'torch>=2\.2'"):
            pool.ensure_started(timeout=60)
        assert pool.info is None  # no worker counts as started


def test_check_without_torch_is_one_error_line(no_torch_python: Path, tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    proc = subprocess.run([str(no_torch_python), "-m", "fxscope", "check", ".", "--format", "text"], cwd=root,
                          env=environment(), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stdout == ""  # no findings, no summary that could pass for a result
    lines = proc.stderr.strip().splitlines()
    assert lines == [lines[0]] and lines[0].startswith("fxscope: error: torch cannot be imported by "), proc.stderr
    assert f"{no_torch_python} -m pip install 'torch>=2.2'" in lines[0]
    assert "No module named 'torch'" in lines[0]
    # nothing was cached: once torch is installed, every target is traced
    again = subprocess.run([str(no_torch_python), "-m", "fxscope", "check", ".", "--format", "json"], cwd=root,
                           env=environment(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 2 and again.stdout == "", again.stdout


async def _wait(predicate, what: str, timeout: float = 60.0):
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not (value := predicate()):
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)
    return value


async def test_server_without_torch_sends_one_error_with_the_install_command(no_torch_python: Path,
                                                                              tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    config = ClientServerConfig(server_command=[str(no_torch_python), "-m", "fxscope", "serve"],
                                server_env=environment())
    client = await config.start()
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True)),
            root_uri=root.as_uri(), workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")]))
        path = root / "models.py"
        client.text_document_did_open(types.DidOpenTextDocumentParams(text_document=types.TextDocumentItem(
            uri=path.as_uri(), language_id="python", version=1, text=MODELS)))

        def errors() -> list[types.ShowMessageParams]:
            return [m for m in client.messages if m.type == types.MessageType.Error]

        await _wait(errors, "the torch error message")

        async def status() -> dict:
            return await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="fxscope.status", arguments=[root.as_uri()]))

        folder = (await status())["folders"][0]
        assert folder["worker"].startswith("failed: torch cannot be imported by "), folder
        # An edit runs another round: it fails the same way, and says nothing new.
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=path.as_uri(), version=2),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=MODELS + "\n# edited\n")]))
        def ended() -> list[str]:
            return [v.message or "" for p in client.progress_reports.values() for v in p
                    if isinstance(v, types.WorkDoneProgressEnd)]

        await _wait(lambda: len(ended()) >= 1, "the start-up round's progress to end")
        # A re-trace fails the same way: its progress ends, saying why, and no new message appears.
        await client.workspace_execute_command_async(types.ExecuteCommandParams(
            command="fxscope.retrace", arguments=[root.as_uri()]))
        await _wait(lambda: len(ended()) >= 2, "the re-trace's progress to end")
        assert all(m.startswith("failed: torch cannot be imported") for m in ended()), ended()
        folder = (await status())["folders"][0]
        assert folder["worker"].startswith("failed: torch cannot be imported"), folder
        [message] = errors()
        assert message.message.startswith("fxscope: torch cannot be imported by ")
        assert f"{no_torch_python} -m pip install 'torch>=2.2'" in message.message
        # no target was blamed: no finding in any published diagnostics
        assert not [d for diags in client.diagnostics.values() for d in diags], client.diagnostics
    finally:
        await client.shutdown_session()
        await client.stop()
