"""``--format json``: the report itself (valid against the packaged report.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["render"]


def render(report: dict[str, Any], *, color: bool = False, root: Path | None = None) -> str:
    """The report as indented JSON (``color`` and ``root`` are ignored)."""
    return json.dumps(report, indent=2) + "\n"
