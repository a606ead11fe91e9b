"""A target's result as the engine hands it up: its typed outcome plus how it was obtained.

>>> relativize("/ws/pkg/m.py", "/ws"), relativize("/site/lib.py", "/ws")
('pkg/m.py', '/site/lib.py')
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fxscope.model import TargetOutcome
from fxscope.model.codes import CODES, finding_dict
from fxscope.project.discovery import FileError, Target

__all__ = ["CheckResult", "TargetResult", "class_type", "covered_skips", "drop_covered_skips", "is_static_skip",
           "relativize", "skipped_body", "skipped_result"]


@dataclass(frozen=True)
class TargetResult:
    """One target's result: its :class:`~fxscope.model.TargetOutcome`, whether it came from the
    cache, and how long the trace took."""

    target: Target
    outcome: TargetOutcome
    cached: bool = False
    duration_ms: float = 0.0


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


def skipped_body(target: Target) -> dict[str, Any]:
    """The result body of a class that needs constructor arguments and has no factory (FXS405)."""
    args = ", ".join(a for a in target.required_args) or "arguments"
    finding = finding_dict(
        "FXS405", f"`{target.qualname}` needs constructor arguments ({args}) and no factory is configured",
        hint=CODES["FXS405"].help, file=target.file, line=target.line,
    )
    return {"status": "skipped", "modules": [], "nodes": 0, "findings": [finding]}


def skipped_result(target: Target) -> TargetResult:
    """The result of a class that needs constructor arguments and has no factory (FXS405)."""
    return TargetResult(target, TargetOutcome.from_json(skipped_body(target), target=target.id))


def is_static_skip(body: Mapping[str, Any]) -> bool:
    """Whether a result ``body`` is a :func:`skipped_body` (decided from the source, never traced); a
    class whose constructor raised without arguments is skipped by the worker, whose bodies name
    the ``torch`` that ran. A cached static skip holds only while its class needs arguments."""
    return body.get("status") == "skipped" and "torch" not in body


def class_type(target: Target) -> str | None:
    """The qualified type name of a class target (``pkg.models.Net``), None for a factory."""
    return f"{target.module}.{target.qualname}" if target.kind == "class" and target.module else None


def covered_skips(results: Sequence[TargetResult]) -> set[str]:
    """Ids of the skipped classes (see :func:`skipped_result`) that a factory target in
    ``results`` built: they were checked after all."""
    built = {r.outcome.root_type for r in results if r.target.kind == "factory" and r.outcome.modules}
    return {r.target.id for r in results
            if r.outcome.status == "skipped" and r.target.module and class_type(r.target) in built}


def drop_covered_skips(results: Sequence[TargetResult]) -> list[TargetResult]:
    """``results`` with the FXS405 of every covered skip (:func:`covered_skips`) removed. The
    skipped result itself stays (status ``skipped``, no findings); others are unchanged."""
    covered = covered_skips(results)
    return [replace(r, outcome=replace(r.outcome, findings=())) if r.target.id in covered else r for r in results]
