"""Assemble the report (a typed :class:`~fxscope.model.Report`) from per-target results.

Paths inside the workspace are root-relative posix paths; paths outside stay absolute. The same
problem seen by several targets is one finding: same code, same range and same anchor (two call
sites of one library function are two findings, each at its own anchor); it keeps every target
(``scopes`` name theirs, ``targets`` lists them all when more than one saw it) and every target's
call chain (``related``; once the chains differ, each entry names its target).

>>> from fxscope.model import Location
>>> a = Finding("FXS402", "error", "m", Location("m.py", 1), target="a")
>>> [f.targets for f in merge_findings([a, replace(a, target="b")])]
[('a', 'b')]
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import replace
from typing import Any

from fxscope import __version__
from fxscope.engine.results import CheckResult, TargetResult, relativize
from fxscope.model import Finding, Location, Report, ReportTarget, Scope, Summary
from fxscope.model.codes import CODES, SEVERITIES
from fxscope.model.sandbox import SandboxStatus
from fxscope.model.location import is_absolute
from fxscope.project.discovery import FileError
from fxscope.report.locations import sort_key

__all__ = ["build_report", "check_report", "file_error_finding", "library_of", "merge_findings",
           "merge_key", "target_findings"]


def _relative(loc: Location, root: str) -> Location:
    if not is_absolute(loc.file):
        return loc
    rel = relativize(loc.file, root)
    return loc if rel == loc.file else replace(loc, file=rel)


def file_error_finding(error: FileError) -> Finding:
    """FXS402 for a workspace file that does not parse (its target id is the file)."""
    return Finding("FXS402", CODES["FXS402"].severity, f"could not import: SyntaxError: {error.message}",
                   Location(error.file, error.line, error.column or None), hint=CODES["FXS402"].help,
                   target=error.file)


def _range(loc: Location | None) -> tuple[Any, ...]:
    return loc.range_key() if loc is not None else ()


def merge_key(finding: Finding) -> tuple[Any, ...]:
    """Identity of a finding across targets: code, range and anchor range."""
    return (finding.code, *finding.location.range_key(), _range(finding.anchor))


def merge_findings(findings: Iterable[Finding]) -> list[Finding]:
    """One finding per :func:`merge_key`, in input order (sort first): attributed to the first
    target, with every target's scopes (each scope names its target), every distinct call chain
    (``related``; once chains differ, each entry names its target) and, when several targets saw
    it, their ids in ``targets``."""
    order: list[tuple[Any, ...]] = []
    first: dict[tuple[Any, ...], Finding] = {}
    scopes: dict[tuple[Any, ...], list[Scope]] = {}
    related: dict[tuple[Any, ...], list[Location]] = {}
    targets: dict[tuple[Any, ...], list[str]] = {}
    for f in findings:
        key = merge_key(f)
        own = [s if s.target else replace(s, target=f.target) for s in f.scopes]
        if key not in first:
            order.append(key)
            first[key], scopes[key], related[key], targets[key] = f, own, list(f.related), list(f.all_targets())
            continue
        known = {(s.path, s.target) for s in scopes[key]}
        scopes[key].extend(s for s in own if (s.path, s.target) not in known)
        related[key] = _merge_related(related[key], first[key].target, f)
        targets[key].extend(t for t in f.all_targets() if t not in targets[key])
    return [replace(first[k], scopes=tuple(scopes[k]), related=tuple(related[k]),
                    targets=tuple(targets[k]) if len(targets[k]) > 1 else ())
            for k in order]


def _chain(related: Iterable[Location]) -> tuple[tuple[Any, ...], ...]:
    return tuple((*r.range_key(), r.message) for r in related)


def _merge_related(existing: list[Location], first_target: str, other: Finding) -> list[Location]:
    """The call chains of a merged finding (``existing``, first seen by ``first_target``) with
    ``other``'s chain added unless it has that chain already; once two chains differ, every
    entry names the target it was seen by."""
    chain = _chain(other.related)
    if not chain:
        return existing
    by_target: dict[str, list[Location]] = {}
    for r in existing:
        by_target.setdefault(r.target or first_target, []).append(r)
    if any(_chain(rs) == chain for rs in by_target.values()):
        return existing
    return ([r if r.target else replace(r, target=first_target) for r in existing]
            + [r if r.target else replace(r, target=other.target) for r in other.related])


#: The placeholder the fallback hint writes where it cannot name the library function.
EXAMPLE_FUNCTION = "package.module:function"


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


def _hint(finding: Finding) -> str | None:
    """The fallback hint (the tracer's own, more specific hint wins): the code's help text; for
    errors inside installed libraries, how to keep the library code opaque."""
    code = CODES.get(finding.code)
    if code is None:
        return None
    file = finding.location.file
    if code.severity != "error" or not os.path.isabs(file):
        return code.help
    library = library_of(file)
    scopes = [s for s in finding.scopes if s.path]  # never the root model
    where = f"`{library}`" if library else "an installed library"
    if scopes and scopes[0].type.split(".", 1)[0] == (library or "\0"):
        layer = scopes[0].type
        return (f"{code.help} This code is in {where}: keep the `{layer.rsplit('.', 1)[-1]}` layer "
                f"opaque with `leaf-modules = [\"{layer}\"]` in [tool.fxscope].")
    return (f"{code.help} This code is in {where}: keep the library function your code calls here "
            f"opaque with `wrap-functions = [\"{EXAMPLE_FUNCTION}\"]` (or its layer with "
            "`leaf-modules`) in [tool.fxscope], or pass concrete args that avoid this path.")


def target_findings(result: TargetResult, root: str) -> list[Finding]:
    """The findings of one target's result as the report shows them: root-relative paths, the
    target set, and a ``hint`` (the tracer's own, else the fallback)."""
    out = []
    items = [replace(f, location=_relative(f.location, root), target=result.target.id,
                     anchor=_relative(f.anchor, root) if f.anchor is not None else None,
                     related=tuple(_relative(r, root) for r in f.related))
             for f in result.outcome.findings]
    anchored = {(f.code, f.location.range_key(), s.path) for f in items
                if f.location.outside and f.anchor is not None and not f.anchor.outside for s in f.scopes}
    for item in items:
        if item.location.outside and (item.anchor is None or item.anchor.outside):
            # a library layer traced on its own repeats a failure its caller's trace located
            scopes = tuple(s for s in item.scopes if (item.code, item.location.range_key(), s.path) not in anchored)
            if item.scopes and not scopes:
                continue
            item = replace(item, scopes=scopes, anchor=_workspace_anchor(item, result, root))
        if item.hint is None:
            item = replace(item, hint=_hint(item))
        out.append(item)
    return out


def _workspace_anchor(finding: Finding, result: TargetResult, root: str) -> Location | None:
    """Where a finding whose code and anchor are both outside the workspace is shown: the
    innermost workspace step of its call chain, else the class of the innermost workspace module
    that holds the failing instance (a library layer traced on its own has no workspace frame),
    else the target's definition. None when nothing of the target is in the workspace (a
    factory of an installed module)."""
    inside = [r for r in finding.related if not r.outside and not r.file.startswith("<")]
    if inside:
        return replace(inside[-1], message=None, target=None)
    where = {m.path: m.location for m in result.outcome.modules if m.location is not None}
    for scope in finding.scopes:
        path = scope.path
        while path:
            path = path.rpartition(".")[0]
            loc = where.get(path)
            shown = _relative(Location(loc.file, loc.line, cell=loc.cell), root) if loc is not None else None
            if shown is not None and not shown.outside:
                return shown
    t = result.target
    if not t.file or is_absolute(t.file):
        return None
    return Location(t.file, max(t.line, 1))


def report_target(r: TargetResult, root: str, *, graphs: bool) -> ReportTarget:
    """The report's entry for one target (its graphs only when asked for)."""
    t, outcome = r.target, r.outcome
    modules = tuple(replace(m, location=_relative(m.location, root)) if m.location is not None else m
                    for m in outcome.modules)
    return ReportTarget(t.id, t.kind, t.file, max(t.line, 1), outcome.status, r.cached, r.duration_ms,
                        outcome.nodes, modules, outcome.graphs if graphs else None, outcome.analyses,
                        outcome.build, inputs=outcome.inputs)


def build_report(root: str, torch_version: str, results: Sequence[TargetResult], *,
                 file_errors: Iterable[FileError] = (), graphs: bool = False, duration_ms: float = 0.0,
                 sandbox: SandboxStatus | None = None) -> Report:
    """The whole report (its JSON is valid against report.schema.json)."""
    targets: list[ReportTarget] = []
    findings: list[Finding] = [file_error_finding(e) for e in file_errors]
    by_status: dict[str, int] = {}
    for r in sorted(results, key=lambda r: r.target.id):
        entry = report_target(r, root, graphs=graphs)
        targets.append(entry)
        by_status[entry.status] = by_status.get(entry.status, 0) + 1
        findings.extend(target_findings(r, root))
    merged = merge_findings(sorted(findings, key=sort_key))
    by_severity = {s: 0 for s in SEVERITIES}
    for f in merged:
        by_severity[f.severity] = by_severity.get(f.severity, 0) + 1
    summary = Summary(len(targets), by_status, by_severity, sum(int(r.cached) for r in results), duration_ms)
    return Report(root, torch_version, tuple(targets), tuple(merged), summary, __version__, sandbox)


def check_report(check: CheckResult) -> Report:
    """The report of one :meth:`Engine.check <fxscope.engine.Engine.check>`."""
    return build_report(check.root, check.torch_version, check.results, file_errors=check.file_errors,
                        graphs=check.graphs, duration_ms=check.duration_ms, sandbox=check.sandbox)
