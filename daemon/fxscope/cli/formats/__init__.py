"""Report renderers for ``fxscope check --format``: text, json, sarif, github.

``render`` returns the whole output, ending with a newline unless empty; write it as is
(``sys.stdout.write``), not with ``print``.

>>> report = {"root": "/w", "targets": [], "findings": [], "summary": {"targets": 0,
...     "by_status": {}, "by_severity": {}, "duration_ms": 5}}
>>> render(report, "github", color=False, root=Path("/w"))
''
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

__all__ = ["FORMATS", "render"]

#: Format name -> module (imported on first use, so the CLI loads only the one it prints).
_MODULES = {"text": "text", "json": "json_fmt", "sarif": "sarif", "github": "github"}

#: Accepted values of ``--format``.
FORMATS = tuple(_MODULES)


def render(report: dict[str, Any], fmt: str, *, color: bool, root: Path, **options: Any) -> str:
    """Render ``report`` (a report.schema.json v1 document) in format ``fmt``.

    ``color`` enables ANSI colours (text only); ``root`` is the workspace root that the report's
    relative paths start from. ``options`` go to the format's renderer (text: ``show_info``).
    """
    try:
        name = _MODULES[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})") from None
    module = importlib.import_module(f"{__name__}.{name}")
    return module.render(report, color=color, root=Path(root), **options)
