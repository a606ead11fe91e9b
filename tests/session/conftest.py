"""Fixtures of the session tests: a manual clock, a recorder of callbacks, and Workspaces wired
to both (closed when the test ends: no process is left)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from session_support import ManualClock, Recorder, WorkspaceFactory

from fxscope.session import SessionSettings, Workspace


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def rec() -> Recorder:
    return Recorder()


@pytest.fixture
def session(clock: ManualClock, rec: Recorder) -> Iterator[WorkspaceFactory]:
    """``session(root, **settings)``: a Workspace on ``root`` with the test's clock and recorder."""
    made: list[Workspace] = []

    def make(root: Path, **settings: Any) -> Workspace:
        ws = Workspace(root, settings=SessionSettings(**settings), clock=clock, on_results=rec.on_results,
                       on_progress=rec.on_progress, on_warning=rec.warnings.append)
        made.append(ws)
        return ws

    yield make
    for ws in made:
        ws.close()
