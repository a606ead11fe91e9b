"""A class's summary for hovers and code lenses: how its own target ended, or how the models it is
part of traced it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fxscope.engine.results import REACHED
from fxscope.model import AnalysisSummary, ClassSummary, Finding
from fxscope.model.outcome import TargetOutcome
from fxscope.project.discovery import Target
from fxscope.session.index import Instance

__all__ = ["class_summary"]


def _analyses(target: Target | None, outcome: TargetOutcome | None, seen: Sequence[Instance],
              rooted: Mapping[str, Mapping[str, AnalysisSummary]]) -> dict[str, AnalysisSummary]:
    """The analysis summaries of the class's own target (by analysis name), then those of each
    other target whose model is the class (``name [target]``)."""
    out = dict(outcome.analyses) if outcome is not None and target is not None else {}
    for tid in sorted({i.target for i in seen if i.module.path == ""} - {target.id if target else ""}):
        out.update({f"{name} [{tid}]": summary for name, summary in rooted.get(tid, {}).items()})
    return out


def class_summary(file: str, line: int, names: tuple[str, str], target: Target | None, outcome: TargetOutcome | None,
                  findings: Sequence[Finding], seen: Sequence[Instance], pending: bool,
                  rooted: Mapping[str, Mapping[str, AnalysisSummary]] | None = None,
                  analysing: tuple[str, ...] = ()) -> ClassSummary:
    """The summary of the class at ``line`` of ``file`` (``names``: its qualified name and type), before
    its leaf children and findings are counted: ``target`` is its own class target, ``outcome`` and
    ``findings`` that target's stored result, ``seen`` its instances in traced models, ``rooted`` the
    analysis summaries of the targets whose model some instance is the root of (by target id),
    ``analysing`` the analyses of its target still running (its fx phase answered)."""
    qualname, type_name = names
    others = sorted({i.target for i in seen} - {target.id if target else ""})
    targets = ([target.id] if target else []) + others
    reason = reason_code = None
    nodes = 0
    build = provenance = inputs = None
    inputs_for: tuple[str, ...] = ()
    reached = [i for i in seen if i.module.status in REACHED]
    if target is not None and pending:
        status = "pending"
    elif outcome is not None and outcome.status == "skipped" and reached:
        status = "failed" if any(i.module.status == "failed" for i in reached) else "traced"  # through a parent
    elif outcome is not None:
        status, nodes = outcome.status, outcome.nodes
        if outcome.covered_by:
            reason = f"built by the factory target `{outcome.covered_by}`"
        elif status in ("skipped", "error", "failed"):
            reason = findings[0].message if findings else None
            reason_code = findings[0].code if findings else None
        if outcome.build is not None and outcome.build.kind != "defaults" and status != "skipped":
            build, provenance = outcome.build.text, outcome.build.provenance()
        if outcome.inputs is not None:
            inputs, inputs_for = outcome.inputs.describe(), outcome.inputs_for
    elif seen:
        status = "failed" if any(i.module.status == "failed" for i in seen) else "traced"
    else:
        status = "not-traced"
    instances = tuple(sorted({i.module.path for i in seen}))
    return ClassSummary(file, line, qualname, type_name, tuple(targets), status, nodes, instances, (), 0, reason,
                        build, provenance, reason_code, _analyses(target, outcome, seen, rooted or {}), inputs,
                        inputs_for, analysing if status != "pending" else ())
