"""Shared test setup: the model corpus in tests/models is importable by plain module name
(`import control_flow`), the way it is when that directory is a workspace root of its own; tests
marked ``requires_torch`` are skipped where torch is not installed (the rest of the suite, the
torch-free layers, still runs)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

MODELS_DIR = Path(__file__).resolve().parent / "models"

if str(MODELS_DIR) not in sys.path:
    sys.path.insert(0, str(MODELS_DIR))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("torch") is not None:
        return
    skip = pytest.mark.skip(reason="needs torch, which is not installed")
    for item in items:
        if item.get_closest_marker("requires_torch") is not None:
            item.add_marker(skip)
