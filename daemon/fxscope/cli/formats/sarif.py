"""``--format sarif``: a SARIF 2.1.0 log for GitHub code scanning and other SARIF viewers.

Workspace files are relative URIs against ``%SRCROOT%`` (declared in ``originalUriBaseIds``);
a finding in a file outside the workspace is located at its anchor, with the outside location as a
related location (absolute ``file://`` URI). The call chain (``related``) becomes a code flow.
A location in a Jupyter notebook is the line and column of that code in the ``.ipynb`` file (what
a SARIF viewer shows), with the cell and the line in it as the location's properties
(``cell``, ``cellLine``, ``cellColumn``) and in the message.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote

import fxscope
from fxscope.model import Finding, Location, Report
from fxscope.model.codes import CODES, Code
from fxscope.report.baseline import fingerprints
from fxscope.report.locations import sort_key
from fxscope.report.notebooks import NotebookIndex

__all__ = ["SARIF_SCHEMA", "render", "rule", "rules", "to_sarif"]

#: The ``$schema`` of the log: the OASIS schema the package ships a copy of.
SARIF_SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"

_LEVEL = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}
#: GitHub code scanning reads this property: error, warning or recommendation.
_PROBLEM_SEVERITY = {
    "error": "error", "warning": "warning", "info": "recommendation", "hint": "recommendation"
}
_CATEGORY = {"1": "tracing", "2": "graph-transform", "3": "unused", "4": "target", "6": "graph-break",
             "7": "export"}
#: The torch feature a code is about, by its hundreds digit (the rest are torch.fx's).
_FEATURE = {"6": "torch.compile", "7": "torch.export"}


def rule(code: Code) -> dict[str, Any]:
    """The SARIF reportingDescriptor of one finding code."""
    return {
        "id": code.code,
        "name": code.name,
        "shortDescription": {"text": code.title},
        "fullDescription": {"text": code.help},
        "help": {"text": code.help, "markdown": code.help},
        "helpUri": code.url,
        "defaultConfiguration": {"level": _LEVEL[code.severity]},
        "properties": {
            "tags": [_FEATURE.get(code.code[3], "torch.fx"), _CATEGORY.get(code.code[3], "other")],
            "problem.severity": _PROBLEM_SEVERITY[code.severity],
        },
    }


def rules() -> list[dict[str, Any]]:
    """A rule for every code in the code table, ordered by code."""
    return [rule(CODES[c]) for c in sorted(CODES)]


def _artifact(loc: Location) -> dict[str, Any]:
    if loc.outside:
        return {"uri": Path(loc.file).as_uri()}
    return {"uri": quote(loc.file, safe="/"), "uriBaseId": SRCROOT}


def _region(loc: Location, notebooks: NotebookIndex) -> tuple[dict[str, Any], dict[str, Any]]:
    """The region of ``loc`` (in a notebook: in the ``.ipynb`` file) and, in a notebook, the
    cell properties."""
    if loc.cell is not None:
        start = notebooks.to_file(loc)
        if start is not None:
            region: dict[str, Any] = {"startLine": start[0], "startColumn": start[1]}
            if loc.end_line in (None, loc.line) and loc.end_column is not None:
                end = notebooks.to_file(replace(loc, column=loc.end_column))
                if end is not None and end[0] == start[0]:
                    region.update(endLine=end[0], endColumn=end[1])
            props: dict[str, Any] = {"cell": loc.cell, "cellLine": loc.line}
            if loc.column is not None:
                props["cellColumn"] = loc.column
            return region, props
    region = {"startLine": loc.line}
    if loc.column is not None:
        region["startColumn"] = loc.column
    if loc.end_line is not None:
        region["endLine"] = loc.end_line
    if loc.column is not None and loc.end_column is not None:
        region["endColumn"] = loc.end_column
    return region, {}


def _location(loc: Location, notebooks: NotebookIndex, message: str | None = None) -> dict[str, Any]:
    region, props = _region(loc, notebooks)
    out: dict[str, Any] = {"physicalLocation": {"artifactLocation": _artifact(loc), "region": region}}
    if message:
        out["message"] = {"text": message}
    if props:
        out["properties"] = props
    return out


def _result(finding: Finding, index: dict[str, int], fp: str, notebooks: NotebookIndex) -> dict[str, Any]:
    primary = finding.primary
    where = f" (notebook cell {primary.cell}, line {primary.line})" if primary.cell is not None else ""
    text = finding.message + where + (f"\nHint: {finding.hint}" if finding.hint else "")
    result: dict[str, Any] = {
        "ruleId": finding.code,
        "ruleIndex": index[finding.code],
        "level": _LEVEL[finding.severity],
        "message": {"text": text},
        "locations": [_location(primary, notebooks)],
        "partialFingerprints": {"fxscope/v1": fp},
    }
    related: list[dict[str, Any]] = []
    origin = finding.origin
    if origin is not None:
        related.append(_location(origin, notebooks, "offending code (outside the workspace)"))
    chain = [(r, r.message or "called from here") for r in finding.related]
    related += [_location(loc, notebooks, msg) for loc, msg in chain]
    if related:
        for i, item in enumerate(related, 1):
            item["id"] = i
        result["relatedLocations"] = related
    if chain:
        steps = [{"location": _location(loc, notebooks, msg)} for loc, msg in chain]
        steps.append({"location": _location(primary, notebooks, finding.message)})
        result["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
    props: dict[str, Any] = {"target": finding.target}
    if finding.scopes:
        props["scopes"] = [f"{s.path or '<root>'} ({s.type})" for s in finding.scopes]
    result["properties"] = props
    return result


def to_sarif(report: Report, root: Path) -> dict[str, Any]:
    """The SARIF log (a dict) for ``report``."""
    driver_rules = rules()
    index = {r["id"]: i for i, r in enumerate(driver_rules)}
    findings = sorted(report.findings, key=sort_key)
    for code in sorted({f.code for f in findings} - set(index)):  # a code newer than the table
        index[code] = len(driver_rules)
        driver_rules.append({"id": code})
    version = report.tool_version or fxscope.__version__
    notebooks = NotebookIndex(Path(root))
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "fxscope", "version": version, "rules": driver_rules}},
        "originalUriBaseIds": {SRCROOT: {"uri": Path(root).absolute().as_uri().rstrip("/") + "/"}},
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index, fp, notebooks) for f, fp in zip(findings, fingerprints(findings, root))],
        "properties": {"summary": report.summary.to_json(), "torch": report.torch,
                       **({"sandbox": report.sandbox.to_json()} if report.sandbox is not None else {})},
    }
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def render(report: Report, *, color: bool = False, root: Path) -> str:
    """The SARIF log as indented JSON (``color`` is ignored)."""
    return json.dumps(to_sarif(report, root), indent=2) + "\n"
