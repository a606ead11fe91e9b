"""Assemble the version-1 JSON report (``report.schema.json``) from per-target results.

Paths inside the workspace become root-relative posix paths; paths outside stay absolute.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from fxscope import __version__
from fxscope.project.discovery import FileError, Target
from fxscope.trace.codes import CODES, SEVERITIES, finding_dict

__all__ = ["TargetResult", "build_report", "relativize", "skipped_result", "file_error_finding"]


@dataclass
class TargetResult:
    """One target's outcome: the worker's body plus how it was obtained."""

    target: Target
    body: dict[str, Any]
    cached: bool = False
    duration_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def relativize(path: str, root: str) -> str:
    """Root-relative posix path for files under ``root``; absolute otherwise."""
    if not path:
        return path
    ab = os.path.abspath(path) if os.path.isabs(path) else os.path.abspath(os.path.join(root, path))
    prefix = root.rstrip(os.sep) + os.sep
    if ab.startswith(prefix):
        return ab[len(prefix):].replace(os.sep, "/")
    return ab


def _rel_loc(loc: dict[str, Any], root: str) -> dict[str, Any]:
    out = dict(loc)
    if "file" in out:
        out["file"] = relativize(out["file"], root)
    return out


def _finding(f: dict[str, Any], target_id: str, root: str) -> dict[str, Any]:
    out = _rel_loc(f, root)
    out["target"] = target_id
    if "anchor" in out:
        out["anchor"] = _rel_loc(out["anchor"], root)
    if "related" in out:
        out["related"] = [_rel_loc(r, root) for r in out["related"]]
    return out


def skipped_result(target: Target) -> TargetResult:
    """A class that needs constructor arguments and has no factory (FXS405)."""
    args = ", ".join(a for a in target.required_args) or "arguments"
    finding = finding_dict(
        "FXS405", f"`{target.qualname}` needs constructor arguments ({args}) and no factory is configured",
        hint=CODES["FXS405"].help, file=target.file, line=target.line,
    )
    return TargetResult(target, {"status": "skipped", "modules": [], "nodes": 0, "findings": [finding]})


def file_error_finding(error: FileError) -> dict[str, Any]:
    """FXS402 for a workspace file that does not parse (its target id is the file)."""
    column = {"column": error.column} if error.column else {}
    return finding_dict("FXS402", f"could not import: SyntaxError: {error.message}",
                        hint=CODES["FXS402"].help, file=error.file, line=error.line, **column,
                        target=error.file)


def _merge_across_targets(findings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One finding per code and range: the same problem seen by several targets (a block traced
    on its own and inside the model) is reported once, attributed to the first target, with every
    target's scopes (each scope names its target)."""
    merged: dict[tuple, dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for f in findings:
        key = (f["code"], f.get("file"), f.get("line"), f.get("column"), f.get("end_line"), f.get("end_column"))
        scopes = [{**s, "target": f["target"]} for s in f.get("scopes", [])]
        first = merged.get(key)
        if first is None:
            merged[key] = f
            if scopes:
                f["scopes"] = scopes
            out.append(f)
            continue
        known = {(s["path"], s.get("target")) for s in first.get("scopes", [])}
        for s in scopes:
            if (s["path"], s["target"]) not in known:
                first.setdefault("scopes", []).append(s)
    return out


def _hint(finding: dict[str, Any]) -> str | None:
    """The code's help text; for errors inside installed libraries, how to keep them opaque."""
    code = CODES.get(finding["code"])
    if code is None:
        return None
    scopes = finding.get("scopes") or []
    if code.severity == "error" and os.path.isabs(finding.get("file", "")) and scopes:
        leaf = scopes[0]["type"]
        return (f"{code.help} This code is in an installed library: to keep `{leaf.rsplit('.', 1)[-1]}` "
                f"opaque, add `leaf-modules = [\"{leaf}\"]` to [tool.fxscope], or pass concrete args "
                "that avoid this path.")
    return code.help


def _sort_key(f: dict[str, Any]) -> tuple:
    return (f.get("file", ""), f.get("line", 0), f.get("column", 0), f["code"], f.get("target", ""))


def build_report(root: str, torch_version: str, results: list[TargetResult], *,
                 file_errors: list[FileError] = (), graphs: bool = False, duration_ms: float = 0.0
                 ) -> dict[str, Any]:
    """The whole report dict (valid against report.schema.json version 1)."""
    targets: list[dict[str, Any]] = []
    findings: list[dict[str, Any]] = [file_error_finding(e) for e in file_errors]
    by_status: dict[str, int] = {}
    cached = 0
    for r in sorted(results, key=lambda r: r.target.id):
        t, body = r.target, r.body
        entry: dict[str, Any] = {
            "id": t.id,
            "kind": t.kind,
            "file": t.file,
            "line": max(t.line, 1),
            "status": body.get("status", "error"),
            "cached": r.cached,
            "duration_ms": round(r.duration_ms, 3),
            "nodes": int(body.get("nodes", 0)),
            "modules": [_rel_loc(m, root) for m in body.get("modules", [])],
        }
        if graphs and body.get("graphs") is not None:
            entry["graphs"] = [
                {"module": g["module"], "nodes": [_rel_loc(n, root) for n in g["nodes"]]}
                for g in body["graphs"]
            ]
        targets.append(entry)
        by_status[entry["status"]] = by_status.get(entry["status"], 0) + 1
        cached += int(r.cached)
        for f in body.get("findings", []):
            item = _finding(f, t.id, root)
            item.setdefault("hint", _hint(item))
            if item["hint"] is None:
                del item["hint"]
            findings.append(item)
    findings.sort(key=_sort_key)
    findings = _merge_across_targets(findings)
    by_severity = {s: 0 for s in SEVERITIES}
    for f in findings:
        by_severity[f["severity"]] = by_severity.get(f["severity"], 0) + 1
    return {
        "version": 1,
        "tool": {"name": "fxscope", "version": __version__},
        "torch": torch_version,
        "root": root,
        "targets": targets,
        "findings": findings,
        "summary": {
            "targets": len(targets),
            "by_status": by_status,
            "by_severity": by_severity,
            "cached": cached,
            "duration_ms": round(duration_ms, 3),
        },
    }
