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

__all__ = ["CheckResult", "TargetResult", "drop_covered_skips", "is_static_skip", "relativize", "skipped_result"]


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
    """A class that needs constructor arguments and has no factory (FXS405)."""
    args = ", ".join(a for a in target.required_args) or "arguments"
    finding = finding_dict(
        "FXS405", f"`{target.qualname}` needs constructor arguments ({args}) and no factory is configured",
        hint=CODES["FXS405"].help, file=target.file, line=target.line,
    )
    return TargetResult(target, {"status": "skipped", "modules": [], "nodes": 0, "findings": [finding]})


def is_static_skip(body: dict[str, Any]) -> bool:
    """Whether ``body`` is a :func:`skipped_result` (decided from the source, never traced); a
    class whose constructor raised without arguments is skipped by the worker, whose bodies name
    the ``torch`` that ran. A cached static skip holds only while its class needs arguments."""
    return body.get("status") == "skipped" and "torch" not in body


def drop_covered_skips(results: list[TargetResult]) -> list[TargetResult]:
    """``results`` with the FXS405 of every skipped class (see :func:`skipped_result`) removed
    when a factory target in ``results`` built that class: it was checked after all. The skipped
    result itself stays (status ``skipped``, no findings); other results are returned unchanged."""
    built = {r.body["modules"][0]["type"] for r in results
             if r.target.kind == "factory" and r.body.get("modules")}
    out = []
    for r in results:
        t = r.target
        if r.body.get("status") == "skipped" and t.module and f"{t.module}.{t.qualname}" in built:
            r = replace(r, body={**r.body, "findings": []})
        out.append(r)
    return out
