"""``--format json``: the report itself (valid against the packaged report.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path

from fxscope.model import Report

__all__ = ["render"]


def render(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """The report document as indented JSON (``color`` and ``root`` are ignored)."""
    return json.dumps(report.to_json(), indent=2) + "\n"
