"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

>>> escape_property("a:b,c%")
'a%3Ab%2Cc%25'
"""

from __future__ import annotations

from pathlib import Path

from fxscope.model import Finding, Report
from fxscope.model.codes import CODES
from fxscope.report.locations import display_path, sort_key

__all__ = ["annotation", "escape_data", "escape_property", "render"]

_COMMAND = {"error": "error", "warning": "warning", "info": "notice", "hint": "notice"}


def escape_data(text: str) -> str:
    """Escape a workflow command's message; other non-printable characters (escape sequences,
    line separators) from model code are shown as Python escapes, never passed to the log."""
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def escape_property(text: str) -> str:
    """Escape a workflow command property value (``file=``, ``title=``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(finding: Finding, root: Path) -> str:
    """One ``::error file=...::message`` line for ``finding``."""
    loc = finding.primary
    props = [("file", display_path(loc.file, root)), ("line", str(loc.line))]
    if loc.column is not None:
        props.append(("col", str(loc.column)))
    if loc.end_line is not None:
        props.append(("endLine", str(loc.end_line)))
    if loc.column is not None and loc.end_column is not None:
        props.append(("endColumn", str(loc.end_column)))
    code = finding.code
    name = CODES[code].name if code in CODES else ""
    props.append(("title", f"{code} ({name})" if name else code))

    lines = [finding.message]
    origin = finding.origin
    if origin is not None:
        col = f":{origin.column}" if origin.column is not None else ""
        lines.append(f"at {origin.file}:{origin.line}{col}")
    if finding.hint:
        lines.append(finding.hint)
    command = _COMMAND.get(finding.severity, "notice")
    head = ",".join(f"{key}={escape_property(value)}" for key, value in props)
    return f"::{command} {head}::{escape_data(chr(10).join(lines))}"


def render(report: Report, *, color: bool = False, root: Path) -> str:
    """Annotations for every finding, sorted by file, line, column, code (``color`` is ignored)."""
    findings = sorted(report.findings, key=sort_key)
    return "".join(annotation(f, root) + "\n" for f in findings)
