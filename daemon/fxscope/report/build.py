"""Assemble the version-1 JSON report (``report.schema.json``) from per-target results.

Paths inside the workspace become root-relative posix paths; paths outside stay absolute. The
same problem seen by several targets is one finding: same code, same range and same anchor (two
call sites of one library function are two findings, each at its own anchor); it keeps every
target (``scopes`` name theirs, and ``targets`` lists them all when more than one saw it).

>>> a = {"code": "FXS402", "severity": "error", "message": "m", "file": "m.py", "line": 1, "target": "a"}
>>> [f.get("targets") for f in merge_findings([a, {**a, "target": "b"}])]
[['a', 'b']]
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from fxscope import __version__
from fxscope.engine.results import CheckResult, TargetResult, relativize
from fxscope.project.discovery import FileError
from fxscope.model.codes import CODES, SEVERITIES, finding_dict

__all__ = ["build_report", "check_report", "file_error_finding", "library_of", "merge_findings", "merge_key",
           "target_findings"]


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


def file_error_finding(error: FileError) -> dict[str, Any]:
    """FXS402 for a workspace file that does not parse (its target id is the file)."""
    column = {"column": error.column} if error.column else {}
    return finding_dict("FXS402", f"could not import: SyntaxError: {error.message}",
                        hint=CODES["FXS402"].help, file=error.file, line=error.line, **column,
                        target=error.file)


def _range(loc: dict[str, Any] | None) -> tuple[Any, ...]:
    if not loc:
        return ()
    return (loc.get("file"), loc.get("line"), loc.get("column"), loc.get("end_line"), loc.get("end_column"))


def merge_key(finding: dict[str, Any]) -> tuple[Any, ...]:
    """Identity of a finding across targets: code, range and anchor range."""
    return (finding["code"], *_range(finding), _range(finding.get("anchor")))


def merge_findings(findings: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One finding per :func:`merge_key`, in input order (sort first): attributed to the first
    target, with every target's scopes (each scope names its target), every distinct call chain
    (``related``; once chains differ, each entry names its target) and, when several targets saw
    it, their ids in ``targets``. The inputs are not modified."""
    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for f in findings:
        key = merge_key(f)
        scopes = [{**s, "target": s.get("target") or f["target"]} for s in f.get("scopes", [])]
        first = merged.get(key)
        if first is None:
            first = dict(f)
            if scopes:
                first["scopes"] = scopes
            first.pop("targets", None)
            merged[key] = first
            out.append(first)
            targets = list(f.get("targets") or [f["target"]])
        else:
            known = {(s["path"], s.get("target")) for s in first.get("scopes", [])}
            for s in scopes:
                if (s["path"], s["target"]) not in known:
                    first.setdefault("scopes", []).append(s)
            _merge_related(first, f)
            targets = list(first.get("targets") or [first["target"]])
            for t in f.get("targets") or [f["target"]]:
                if t not in targets:
                    targets.append(t)
        if len(targets) > 1:
            first["targets"] = targets
    return out


def _chain(related: Iterable[dict[str, Any]]) -> tuple[tuple[Any, ...], ...]:
    return tuple((*_range(r), r.get("message")) for r in related)


def _merge_related(first: dict[str, Any], other: dict[str, Any]) -> None:
    """Add ``other``'s call chain to ``first`` (a merged finding) unless it has that chain
    already; once two chains differ, every entry names the target it was seen by."""
    chain = _chain(other.get("related") or [])
    if not chain:
        return
    existing = first.get("related") or []
    by_target: dict[str, list[dict[str, Any]]] = {}
    for r in existing:
        by_target.setdefault(r.get("target") or first["target"], []).append(r)
    if any(_chain(rs) == chain for rs in by_target.values()):
        return
    target = other["target"]
    first["related"] = [{**r, "target": r.get("target") or first["target"]} for r in existing] + [
        {**r, "target": r.get("target") or target} for r in other.get("related") or []]


def library_of(file: str) -> str | None:
    """The top-level package of an installed file (``.../site-packages/einops/einops.py`` ->
    ``einops``), or None for a workspace file."""
    if not os.path.isabs(file):
        return None
    posix = file.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in posix:
            head = posix.rsplit(marker, 1)[1].split("/", 1)[0]
            return head[:-3] if head.endswith(".py") else head
    return None


def _hint(finding: dict[str, Any]) -> str | None:
    """The fallback hint (the tracer's own, more specific hint wins): the code's help text; for
    errors inside installed libraries, how to keep the library code opaque."""
    code = CODES.get(finding["code"])
    if code is None:
        return None
    library = library_of(finding.get("file", ""))
    if code.severity != "error" or not os.path.isabs(finding.get("file", "")):
        return code.help
    scopes = [s for s in finding.get("scopes") or () if s.get("path")]  # never the root model
    where = f"`{library}`" if library else "an installed library"
    if scopes and scopes[0]["type"].split(".", 1)[0] == (library or "\0"):
        layer = scopes[0]["type"]
        return (f"{code.help} This code is in {where}: keep the `{layer.rsplit('.', 1)[-1]}` layer "
                f"opaque with `leaf-modules = [\"{layer}\"]` in [tool.fxscope].")
    return (f"{code.help} This code is in {where}: keep the library function your code calls here "
            "opaque with `wrap-functions = [\"package.module:function\"]` (or its layer with "
            "`leaf-modules`) in [tool.fxscope], or pass concrete args that avoid this path.")


def _sort_key(f: dict[str, Any]) -> tuple[Any, ...]:
    anchor = f.get("anchor") or {}
    return (f.get("file", ""), f.get("line", 0), f.get("column") or 0, f["code"],
            anchor.get("file", ""), anchor.get("line", 0), anchor.get("column") or 0, f.get("target", ""))


def target_findings(result: TargetResult, root: str) -> list[dict[str, Any]]:
    """The findings of one target's result as report findings: root-relative paths, ``target``
    set, and a ``hint`` (the tracer's own, else the fallback)."""
    out = []
    for f in result.body.get("findings", []):
        item = _finding(f, result.target.id, root)
        if item.get("hint") is None:
            item.pop("hint", None)
            hint = _hint(item)
            if hint is not None:
                item["hint"] = hint
        out.append(item)
    return out


def build_report(root: str, torch_version: str, results: list[TargetResult], *,
                 file_errors: Iterable[FileError] = (), graphs: bool = False, duration_ms: float = 0.0
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
        findings.extend(target_findings(r, root))
    findings.sort(key=_sort_key)
    findings = merge_findings(findings)
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


def check_report(check: CheckResult) -> dict[str, Any]:
    """The version-1 report of one :meth:`Engine.check <fxscope.engine.Engine.check>`."""
    return build_report(check.root, check.torch_version, check.results, file_errors=check.file_errors,
                        graphs=check.graphs, duration_ms=check.duration_ms)
