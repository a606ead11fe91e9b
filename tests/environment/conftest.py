"""One interpreter without torch for the module's tests (building it takes a second)."""

from __future__ import annotations

from pathlib import Path

import pytest

from env_support import python_without_torch


@pytest.fixture(scope="module")
def no_torch_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return python_without_torch(tmp_path_factory.mktemp("no-torch"))
