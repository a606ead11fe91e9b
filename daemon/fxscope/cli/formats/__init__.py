"""Report renderers for ``fxscope check --format``: text, json, sarif, github.

``render`` returns the whole output, ending with a newline unless empty; write it as is
(``sys.stdout.write``), not with ``print``.

>>> from fxscope.model import Report, Summary
>>> render(Report("/w", "2.3", (), (), Summary(0)), "github", color=False, root=Path("/w"))
''
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from fxscope.model import Report

__all__ = ["FORMATS", "render"]

#: Format name -> module (imported on first use, so the CLI loads only the one it prints).
_MODULES = {"text": "text", "json": "json_fmt", "sarif": "sarif", "github": "github"}

#: Accepted values of ``--format``.
FORMATS = tuple(_MODULES)


def render(report: Report, fmt: str, *, color: bool, root: Path, **options: Any) -> str:
    """Render ``report`` (the typed version-1 report) in format ``fmt``.

    ``color`` enables ANSI colours (text only); ``root`` is the workspace root that the report's
    relative paths start from. Locations in a notebook are shown in their cell. ``options`` go to
    the format's renderer (text: ``show_info``).
    """
    try:
        name = _MODULES[fmt]
    except KeyError:
        raise ValueError(f"unknown format {fmt!r} (expected one of {', '.join(FORMATS)})") from None
    from fxscope.report.notebooks import cell_report

    module = importlib.import_module(f"{__name__}.{name}")
    report = cell_report(report, Path(root))  # a notebook's locations name their cell
    out: str = module.render(report, color=color, root=Path(root), **options)
    return out
