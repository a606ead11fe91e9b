"""Shared test setup: the model corpus in tests/models is importable by plain module name
(`import control_flow`), the way it is when that directory is a workspace root of its own."""

from __future__ import annotations

import sys
from pathlib import Path

MODELS_DIR = Path(__file__).resolve().parent / "models"

if str(MODELS_DIR) not in sys.path:
    sys.path.insert(0, str(MODELS_DIR))
