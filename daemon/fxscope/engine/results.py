"""A target's outcome as the engine hands it up: the worker's body plus how it was obtained.

>>> relativize("/ws/pkg/m.py", "/ws"), relativize("/site/lib.py", "/ws")
('pkg/m.py', '/site/lib.py')
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

from fxscope.project.discovery import FileError, Target
from fxscope.model.codes import CODES, finding_dict

__all__ = ["CheckResult", "REACHED", "TargetResult", "drop_covered_skips", "reached_types", "relativize",
           "skipped_result"]


@dataclass
class TargetResult:
    """One target's outcome: the worker's ``body`` (report-schema target fields plus ``findings``,
    ``graphs`` and ``files``: root-relative path -> hash of every file the trace read), whether it
    came from the cache, and how long the trace took."""

    target: Target
    body: dict[str, Any]
    cached: bool = False
    duration_ms: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckResult:
    """What one :meth:`Engine.check <fxscope.engine.Engine.check>` computed: the workspace
    ``root``, the torch version the targets were traced with, each selected target's result
    (covered skips already dropped), the unparsable files under the checked paths, whether graphs
    were asked for, and the wall time. Front ends turn it into the version-1 report with
    :func:`fxscope.report.build.check_report`."""

    root: str
    torch_version: str
    results: list[TargetResult]
    file_errors: list[FileError] = field(default_factory=list)
    graphs: bool = False
    duration_ms: float = 0.0


def relativize(path: str, root: str) -> str:
    """Root-relative posix path for files under ``root``; absolute otherwise."""
    if not path:
        return path
    ab = os.path.abspath(path) if os.path.isabs(path) else os.path.abspath(os.path.join(root, path))
    prefix = root.rstrip(os.sep) + os.sep
    if ab.startswith(prefix):
        return ab[len(prefix):].replace(os.sep, "/")
    return ab


def skipped_result(target: Target) -> TargetResult:
    """A class that needs constructor arguments, has no factory and no recipe (FXS405)."""
    args = ", ".join(a for a in target.required_args) or "arguments"
    finding = finding_dict(
        "FXS405", f"`{target.qualname}` needs constructor arguments ({args}) and no factory is configured",
        hint=CODES["FXS405"].help, file=target.file, line=target.line,
    )
    return TargetResult(target, {"status": "skipped", "modules": [], "nodes": 0, "findings": [finding],
                                 "build_key": target.build_key()})


#: Module statuses that mean the module's forward was traced (into a graph, or failing with a finding).
REACHED = ("traced", "failed")


def reached_types(results: list[TargetResult]) -> set[str]:
    """Qualified class names (``pkg.model.Block``) whose forward some result traced: as a target
    or as a module instance inside one."""
    reached: set[str] = set()
    for r in results:
        modules = r.body.get("modules")
        for row in modules if isinstance(modules, list) else ():
            if isinstance(row, dict) and row.get("status") in REACHED and isinstance(row.get("type"), str):
                reached.add(row["type"])
    return reached


def _factory_roots(results: list[TargetResult]) -> dict[str, str]:
    """Qualified class name -> id of the configured factory target whose model is that class."""
    roots: dict[str, str] = {}
    for r in results:
        modules = r.body.get("modules")
        if r.target.kind == "factory" and isinstance(modules, list) and modules and isinstance(modules[0], dict):
            kind = modules[0].get("type")
            if isinstance(kind, str):
                roots.setdefault(kind, r.target.id)
    return roots


def drop_covered_skips(results: list[TargetResult]) -> list[TargetResult]:
    """``results`` where a class target is covered by another target:

    - a class whose model a configured factory target built is the factory's to report: its own
      automatic build (from defaults or a recipe) becomes ``skipped`` with no findings;
    - the FXS405 of a class that could not be built on its own is removed when another target
      reached that class (a module instance inside a traced model): it was checked after all.

    Other results are returned unchanged."""
    reached = reached_types(results)
    factories = _factory_roots(results)
    out = []
    for r in results:
        t = r.target
        name = f"{t.module}.{t.qualname}" if t.kind == "class" and t.module else None
        if name is not None and name in factories:
            if r.body.get("findings") or r.body.get("status") != "skipped":
                r = replace(r, body={**r.body, "status": "skipped", "findings": [], "covered_by": factories[name]})
        elif name is not None and r.body.get("status") == "skipped" and name in reached:
            r = replace(r, body={**r.body, "findings": []})
        out.append(r)
    return out
