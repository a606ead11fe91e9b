"""``--format github``: GitHub Actions workflow commands, one annotation per finding.

A finding in a Jupyter notebook is annotated at the line of its code in the ``.ipynb`` file (where
GitHub shows it), its title naming the cell and the line in it.

>>> escape_property("a:b,c%")
'a%3Ab%2Cc%25'
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fxscope.model import Finding, Location, Report
from fxscope.model.codes import CODES
from fxscope.report.locations import display_path, sort_key
from fxscope.report.notebooks import NotebookIndex, cell_label

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


def _place(loc: Location, notebooks: NotebookIndex | None) -> tuple[list[tuple[str, str]], str]:
    """The annotation's position properties and, in a notebook, where in the cell it is."""
    start = notebooks.to_file(loc) if notebooks is not None and loc.cell is not None else None
    if start is not None:
        props = [("line", str(start[0])), ("col", str(start[1]))]
        if loc.end_line in (None, loc.line) and loc.end_column is not None and notebooks is not None:
            end = notebooks.to_file(replace(loc, column=loc.end_column))
            if end is not None and end[0] == start[0]:
                props += [("endLine", str(end[0])), ("endColumn", str(end[1]))]
        return props, f" in {cell_label(loc)}"
    props = [("line", str(loc.line))]
    if loc.column is not None:
        props.append(("col", str(loc.column)))
    if loc.end_line is not None:
        props.append(("endLine", str(loc.end_line)))
    if loc.column is not None and loc.end_column is not None:
        props.append(("endColumn", str(loc.end_column)))
    return props, ""


def annotation(finding: Finding, root: Path, notebooks: NotebookIndex | None = None) -> str:
    """One ``::error file=...::message`` line for ``finding``."""
    loc = finding.primary
    place, where = _place(loc, notebooks)
    props = [("file", display_path(loc.file, root)), *place]
    code = finding.code
    name = CODES[code].name if code in CODES else ""
    props.append(("title", (f"{code} ({name})" if name else code) + where))

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
    notebooks = NotebookIndex(Path(root))
    out = "".join(annotation(f, root, notebooks) + "\n" for f in findings)
    sandbox = report.sandbox
    if sandbox is not None and sandbox.kind != "landlock":  # the model code ran uncontained: say so
        text = sandbox.phrase() if sandbox.kind == "none" else f"{sandbox.phrase()}: {sandbox.detail}"
        out += f"::warning title=fxscope sandbox::{escape_data(text)}\n"
    return out
