"""``--format json``: the report itself (valid against the packaged report.schema.json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fxscope.model import Report

__all__ = ["render"]


def render(report: Report, *, color: bool = False, root: Path | None = None) -> str:
    """The report document as JSON, one target and one finding per line (``color`` and ``root``
    are ignored). Each line is encoded by the json module's C encoder: a report of hundreds of
    targets is megabytes, which an indenting encoder writes several times slower."""
    data = report.to_json()
    lines = ["{"]
    for i, (key, value) in enumerate(data.items()):
        end = "," if i < len(data) - 1 else ""
        if isinstance(value, list) and value:
            items = ",\n".join(f"    {_line(item)}" for item in value)
            lines.append(f"  {json.dumps(key)}: [\n{items}\n  ]{end}")
        else:
            lines.append(f"  {json.dumps(key)}: {_line(value)}{end}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _line(value: Any) -> str:
    return json.dumps(value, separators=(", ", ": "))
