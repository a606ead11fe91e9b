"""The editor's order over the real server: the open file's targets before the rest of the workspace,
an edit before background work, progress for every run, and a cancellable background check.

The workspaces have one worker and background classes that take seconds to build, so the order
shows in what the server has done when a result arrives (its ``fxscope.status`` counts), never in
timings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from lsp_support import VSCODE, change_doc, initialize, make_workspace, open_doc, uri, wait_until

pytestmark = pytest.mark.requires_torch

BACKGROUND = 8

#: A class that takes a while to build: the background of the workspace.
SLOW = '''import time

import torch
from torch import nn


class Slow{i}(nn.Module):
    def __init__(self):
        super().__init__()
        time.sleep(1.5)
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)
'''

#: The file the user opens, last in discovery order.
OPEN = '''import torch
from torch import nn


class Opened(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        if x.sum() > 0:  # FXS101
            x = x + 1
        return self.lin(x)
'''

EDITED = OPEN.replace("        return self.lin(x)\n", "        n = len(x)  # FXS103\n        return self.lin(x) * n\n")


def _workspace(tmp_path: Path) -> Path:
    extra = {f"bg_{i}.py": SLOW.format(i=i) for i in range(BACKGROUND)}
    extra["zz_open.py"] = OPEN
    return make_workspace(tmp_path / "ws", [], pyproject="[tool.fxscope]\ntimeout = 60\n", extra=extra)


async def _status(client: LanguageClient) -> dict:
    status = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fxscope.status"))
    (folder,) = status["folders"]
    return folder


def _codes(client: LanguageClient, path: Path, version: int | None = None) -> set[str]:
    pubs = [p for p in client.published if p.uri == uri(path) and (version is None or p.version == version)]
    return {str(d.code) for d in pubs[-1].diagnostics} if pubs else set()


def _bad_codes(client: LanguageClient) -> set[str]:
    return {str(d.code) for p in client.published for d in p.diagnostics} & {"FXS403", "FXS404"}


@pytest.mark.slow
async def test_the_open_file_is_traced_before_the_rest_of_the_workspace(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    path = root / "zz_open.py"
    await initialize(client, [root], VSCODE, options={"workers": 1})
    open_doc(client, path)  # sorted last: without priorities it would be traced last
    await wait_until(lambda: "FXS101" in _codes(client, path), timeout=240, what="the open file's diagnostics")
    folder = await _status(client)
    assert folder["total"] == BACKGROUND + 1
    assert folder["done"] <= 3, folder  # the background classes are still being built, one at a time
    assert folder["queued"] + folder["running"] >= BACKGROUND - 2, folder


@pytest.mark.slow
async def test_an_edit_is_traced_before_the_background_work(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    path = root / "zz_open.py"
    await initialize(client, [root], VSCODE, options={"workers": 1, "debounce": 50})
    open_doc(client, path)
    await wait_until(lambda: "FXS101" in _codes(client, path), timeout=240, what="the open file's diagnostics")
    change_doc(client, path, 2, EDITED)
    await wait_until(lambda: "FXS103" in _codes(client, path, version=2), timeout=240,
                     what="the edit's diagnostics")
    folder = await _status(client)
    assert folder["done"] <= BACKGROUND - 3, folder  # the background check is far from over
    assert folder["queued"] + folder["running"] >= 3, folder
    assert _codes(client, path, version=2) >= {"FXS101", "FXS103"}
    assert not _bad_codes(client)  # preempted background jobs are no crashes


async def test_a_configuration_change_reports_progress_and_one_summary(client: LanguageClient, tmp_path):
    root = make_workspace(tmp_path / "ws", ["length.py", "clean.py"])
    await initialize(client, [root], VSCODE)

    def ended() -> list[str]:
        return [str(t) for t, values in client.progress_reports.items()
                if any(isinstance(v, types.WorkDoneProgressEnd) for v in values)]

    await wait_until(ended, timeout=240, what="the start-up progress to end")
    before = set(client.progress_reports)
    logged = len(client.log_messages)
    (root / "pyproject.toml").write_text("[tool.fxscope]\ntimeout = 25\n")  # e.g. a quick fix's edit
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[types.FileEvent(
        uri=uri(root / "pyproject.toml"), type=types.FileChangeType.Changed)]))
    await wait_until(lambda: set(ended()) - before, timeout=240, what="the re-check's progress to end")
    (token,) = set(ended()) - before
    values = client.progress_reports[token]
    begin, end = values[0], values[-1]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    assert begin.message is not None and "targets" in begin.message
    assert any(isinstance(v, types.WorkDoneProgressReport) for v in values)
    assert isinstance(end, types.WorkDoneProgressEnd) and end.message is not None
    assert end.message.split(" targets (")[0].isdigit() and " s" in end.message
    summaries = [m for m in client.log_messages[logged:] if m.message.startswith("fxscope: ")]
    assert len(summaries) == 1 and summaries[0].type == types.MessageType.Info
    assert not [m for m in client.log_messages if m.type == types.MessageType.Error]


@pytest.mark.slow
async def test_cancelling_the_progress_stops_the_background_work(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    path = root / "zz_open.py"
    await initialize(client, [root], VSCODE, options={"workers": 1, "debounce": 50})

    def begun() -> list[str]:
        return [str(t) for t, values in client.progress_reports.items()
                if any(isinstance(v, types.WorkDoneProgressBegin) for v in values)]

    (token,) = await wait_until(begun, timeout=240, what="the start-up progress to begin")
    await wait_until(lambda: any(isinstance(v, types.WorkDoneProgressReport) and "0 of" not in (v.message or "")
                                 for v in client.progress_reports[token]), timeout=240,
                     what="a first background target to finish")
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await wait_until(lambda: isinstance(client.progress_reports[token][-1], types.WorkDoneProgressEnd),
                     timeout=120, what="the cancelled progress to end")
    end = client.progress_reports[token][-1]
    assert end.message is not None and end.message.startswith("cancelled: ") and "left queued" in end.message
    folder = await _status(client)
    assert folder["running"] == 0 and folder["queued"] >= 3 and folder["done"] < folder["total"], folder
    await asyncio.sleep(1.0)  # nothing restarts them on its own
    assert (await _status(client))["running"] == 0
    assert not _bad_codes(client)  # cancelled targets are not reported as failures
    # the server stays usable: an edit is traced
    open_doc(client, path)
    change_doc(client, path, 2, EDITED)
    await wait_until(lambda: "FXS103" in _codes(client, path, version=2), timeout=240,
                     what="the edit's diagnostics after a cancel")


@pytest.mark.slow
async def test_cancelling_the_progress_keeps_the_jobs_of_the_latest_edit(client: LanguageClient, tmp_path):
    root = _workspace(tmp_path)
    path = root / "zz_open.py"
    await initialize(client, [root], VSCODE, options={"workers": 1, "debounce": 50})
    open_doc(client, path)
    await wait_until(lambda: "FXS101" in _codes(client, path), timeout=240, what="the open file's diagnostics")
    tokens = [str(t) for t, values in client.progress_reports.items()
              if not any(isinstance(v, types.WorkDoneProgressEnd) for v in values)]
    assert tokens, "the background check is over before the test could cancel it"
    # the user types, then cancels the progress (the background run): what they typed is still traced
    change_doc(client, path, 2, EDITED)
    for token in tokens:
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await wait_until(lambda: "FXS103" in _codes(client, path, version=2), timeout=240,
                     what="the edit's diagnostics, though the progress was cancelled")
    await wait_until(lambda: all(isinstance(client.progress_reports[t][-1], types.WorkDoneProgressEnd)
                                 for t in tokens), timeout=120, what="the cancelled progress to end")
    assert any((client.progress_reports[t][-1].message or "").startswith("cancelled: ") for t in tokens)
    folder = await _status(client)
    assert folder["running"] == 0 and folder["queued"] >= 3 and folder["done"] < folder["total"], folder
    assert not _bad_codes(client)
