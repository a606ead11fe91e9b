"""Several ``[tool.fxscope]`` list entries added to a pyproject.toml in one step: a known library's
settings (:mod:`fxscope.report.libraries`), applied by the editor's code action and by
``fxscope init``.

>>> print(with_entries(None, [("leaf-modules", "a.B"), ("wrap-functions", "a:f")]), end="")
[tool.fxscope]
wrap-functions = ["a:f"]
leaf-modules = ["a.B"]
>>> with_entries('[tool.fxscope]\\nleaf-modules = ["a.B"]\\n', [("leaf-modules", "a.B")]) is None
True
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

from fxscope.lsp import edits

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["fxscope_table", "with_entries"]


def fxscope_table(text: str | None) -> Mapping[str, Any] | None:
    """The ``[tool.fxscope]`` table of a pyproject.toml's text (empty when there is none; None
    when the text is not valid TOML)."""
    if not text:
        return {}
    try:
        tool = tomllib.loads(text).get("tool", {})
    except tomllib.TOMLDecodeError:
        return None
    table = tool.get("fxscope", {}) if isinstance(tool, dict) else {}
    return table if isinstance(table, dict) else None


def with_entries(text: str | None, entries: Sequence[tuple[str, str]]) -> str | None:
    """``text`` (None: no file yet) with every (key, value) of ``entries`` that it lacks added to
    the ``[tool.fxscope]`` lists, the table created when missing. None when there is nothing to
    add, or when one entry cannot be added safely (invalid TOML, a dotted-key form): all or
    nothing, never half a configuration."""
    table = fxscope_table(text)
    if table is None:
        return None
    missing = [(k, v) for k, v in entries if v not in (table.get(k) or ())]
    if not missing:
        return None
    current = text
    for key, value in missing:
        edit = edits.add_to_config_list(current, key, value)
        if edit is None:
            return None
        current = edits.apply(current or "", [edit])
    return current
