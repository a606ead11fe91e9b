"""A target's result as the engine hands it up: its typed outcome plus how it was obtained.

>>> relativize("/ws/pkg/m.py", "/ws"), relativize("/site/lib.py", "/ws")
('pkg/m.py', '/site/lib.py')
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from fxscope.model import Finding, TargetOutcome
from fxscope.model.codes import CODES, finding_dict
from fxscope.model.sandbox import SandboxStatus
from fxscope.project.discovery import FileError, Target
from fxscope.project.files import rooted_name

__all__ = ["REACHED", "CheckResult", "TargetResult", "class_type", "covered_by_factory", "drop_covered_skips",
           "reached_in", "reached_types", "relativize", "scoped_type", "skipped_result"]


@dataclass(frozen=True)
class TargetResult:
    """One target's result: its :class:`~fxscope.model.TargetOutcome`, whether it came from the
    cache, and how long the trace took. ``pending``: the analyses still running in the target's
    analyses phase (this is its fx phase's answer; the merged result follows)."""

    target: Target
    outcome: TargetOutcome
    cached: bool = False
    duration_ms: float = 0.0
    pending: tuple[str, ...] = ()


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
    #: Whether the user code the check ran was sandboxed (None: not known).
    sandbox: SandboxStatus | None = None


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
    """The result of a class that needs constructor arguments and has neither a factory nor a
    recipe (FXS405)."""
    args = ", ".join(a for a in target.required_args) or "arguments"
    why = f"; fxscope could not build it on its own: {target.unbuilt}" if target.unbuilt else ""
    finding = Finding.from_json(finding_dict(
        "FXS405", f"`{target.qualname}` needs constructor arguments ({args}) and no factory is configured{why}",
        hint=CODES["FXS405"].help, file=target.file, line=max(target.line, 1)), target=target.id)
    return TargetResult(target, TargetOutcome("skipped", findings=(finding,), build_key=target.build_key()))


def class_type(target: Target) -> str | None:
    """The qualified type name of a class target (``pkg.models.Net``), None for a factory; see
    :func:`scoped_type` for a class imported from an import root."""
    if target.kind != "class" or not target.module:
        return None
    return scoped_type(target, f"{target.module}.{target.qualname}")


def scoped_type(target: Target, type_name: str) -> str:
    """A qualified class name met in ``target``'s trace, told apart from the same name imported
    from elsewhere: with the target's import root in front when it has one (``model.Transformer``
    traced from ``mixtral-moe`` is ``mixtral-moe//model.Transformer``, not the top-level
    ``model.py``'s class)."""
    return rooted_name(target.import_root, type_name) if target.import_root else type_name


def reached_in(result: TargetResult) -> list[str]:
    """The scoped types (:func:`scoped_type`) whose forward ``result`` traced."""
    return [scoped_type(result.target, m.type) for m in result.outcome.modules if m.status in REACHED]


#: Module statuses that mean the module's forward was traced (into a graph, or failing with a finding).
REACHED = ("traced", "failed")


def reached_types(results: Sequence[TargetResult]) -> set[str]:
    """Qualified class names (``pkg.model.Block``) whose forward some result traced: as a target
    or as a module instance inside one."""
    return {kind for r in results for kind in reached_in(r)}


def covered_by_factory(results: Sequence[TargetResult]) -> dict[str, str]:
    """Qualified class name -> id of the configured factory target whose model is that class."""
    roots: dict[str, str] = {}
    for r in results:
        if r.target.kind == "factory" and r.outcome.root_type:
            roots.setdefault(r.outcome.root_type, r.target.id)
    return roots


def _needs_arguments(result: TargetResult) -> bool:
    """A class target fxscope did not build from its constructor's defaults (it needed arguments:
    found, guessed, or not at all)."""
    build = result.outcome.build
    return result.target.needs_args or result.outcome.status == "skipped" or (
        build is not None and build.kind != "defaults")


def drop_covered_skips(results: Sequence[TargetResult]) -> list[TargetResult]:
    """``results`` where a class target is covered by another target:

    - a class that needs arguments, whose model a configured factory target built, is the
      factory's to report: its own automatic build (arguments fxscope found or guessed) becomes
      ``skipped`` with no findings, and says which factory covers it (``covered_by``); a class
      built from its own defaults stays a target of its own;
    - the FXS405 of a class that could not be built on its own is removed when another target
      reached that class (a factory built it, or it is a module instance inside a traced model):
      it was checked after all.

    Other results are returned unchanged."""
    reached = reached_types(results)
    factories = covered_by_factory(results)
    out = []
    for r in results:
        kind = class_type(r.target)
        if kind is not None and kind in factories and _needs_arguments(r):
            if r.outcome.findings or r.outcome.status != "skipped":
                r = replace(r, outcome=replace(r.outcome, status="skipped", findings=(),
                                               covered_by=factories[kind]))
        elif kind is not None and r.outcome.status == "skipped" and kind in reached:
            r = replace(r, outcome=replace(r.outcome, findings=()))
        out.append(r)
    return out
