"""A target's work in two phases: the fx phase (the analyses on the meta device: the tracer, in
well under a second) and the analyses phase (those on real CPU tensors: torch.compile and
torch.export, seconds per class). Each phase is a job of its own with a cache entry of its own;
the engine merges their outcomes into the one :class:`~fxscope.model.TargetOutcome` every front end
reads, so an editor shows fx's answer as soon as it is there and adds the analyses' when they come.

A target is split only when it runs fx and something else; the analyses phase runs only when fx
built and traced the model (its findings stay the target's), on the model fx built (its recipe).

>>> from fxscope.model import TargetOutcome
>>> fx = TargetOutcome("failed", nodes=3, files={"m.py": "a"})
>>> merged = merge(fx, TargetOutcome("traced", files={"m.py": "a", "lib.py": "b"}), ("compile",))
>>> merged.status, merged.nodes, sorted(merged.files)
('failed', 3, ['lib.py', 'm.py'])
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from fxscope.engine.dispatch import BACKGROUND, DEPENDENCY, FOCUS
from fxscope.model import Finding, TargetOutcome
from fxscope.model.outcome import Graphs
from fxscope.project.config import Config

__all__ = ["analysable", "merge", "phase_priority", "split"]

#: The analyses fxscope ships that run on the meta device (their phase is ``fx``); every other
#: analysis runs in the ``analyses`` phase, after its target's fx phase.
META_ANALYSES = ("fx",)

#: Dispatcher priorities (lower first) by the target's tier and phase: fx of the open files, fx of
#: the files they import, the open files' analyses, fx of the rest, then the other analyses. From
#: BACKGROUND on a job is background work that an fx job of an open or imported file preempts, so
#: an edit's fx never waits for an analyses phase, and an open file's compile/export answers do not
#: wait for the fx of the whole repository.
_FX_PRIORITY = {FOCUS: FOCUS, DEPENDENCY: DEPENDENCY, BACKGROUND: BACKGROUND + 1}
_ANALYSES_PRIORITY = {FOCUS: BACKGROUND, DEPENDENCY: BACKGROUND + 2, BACKGROUND: BACKGROUND + 3}


def phase_priority(tier: int, phase: str) -> int:
    """The priority of a job of ``phase`` (``fx``, ``analyses`` or ``all``) of a target at ``tier``
    (:data:`~fxscope.engine.dispatch.FOCUS`, ``DEPENDENCY`` or ``BACKGROUND``)."""
    table = _ANALYSES_PRIORITY if phase == "analyses" else _FX_PRIORITY
    return table.get(tier, table[BACKGROUND])


def split(config: Config, target_id: str) -> tuple[str, ...]:
    """The analyses of the target's analyses phase (empty: one job runs them all, it is not split)."""
    names = config.analyses_for(target_id)
    if not any(n in META_ANALYSES for n in names):
        return ()
    return tuple(n for n in names if n not in META_ANALYSES)


def analysable(fx: TargetOutcome) -> bool:
    """Whether an fx phase's outcome lets the analyses phase run: fx built and traced the model
    (not an import or build failure, a skip, a crash or a timeout, which it reported)."""
    return fx.fault is None and fx.status in ("traced", "partial", "failed")


def merge(fx: TargetOutcome, analyses: TargetOutcome, names: tuple[str, ...]) -> TargetOutcome:
    """The target's outcome from its two phases: fx's status, modules, graphs, build and findings,
    then the analyses phase's findings, graphs, summaries and inputs. An analyses phase that
    faulted (timed out, crashed) adds its finding, saying which analyses it ran, and makes the
    target an ``error`` (as one job that timed out would), with fx's modules, graphs and findings
    kept: it is never green for it."""
    findings = fx.findings + tuple(_phase_finding(f, names) if analyses.fault else f for f in analyses.findings)
    graphs = [*(fx.graphs.to_json() if fx.graphs is not None else ()),
              *(analyses.graphs.to_json() if analyses.graphs is not None else ())]
    files = {**analyses.files, **fx.files}
    warnings = tuple(dict.fromkeys(fx.warnings + analyses.warnings))
    output = "\n".join(o for o in (fx.output, analyses.output) if o) or None
    return replace(fx, status="error" if analyses.fault else fx.status, fault=fx.fault or analyses.fault,
                   findings=findings,
                   graphs=Graphs(json=graphs) if graphs or fx.graphs is not None else None,
                   files=MappingProxyType(files), warnings=warnings, output=output, torch=fx.torch or analyses.torch,
                   analyses=MappingProxyType({**fx.analyses, **analyses.analyses}), inputs=analyses.inputs,
                   inputs_for=analyses.inputs_for)


def _phase_finding(finding: Finding, names: tuple[str, ...]) -> Finding:
    """A fault of the analyses phase (a timeout, a crash), saying it was that phase's."""
    what = " and ".join(names) or "the"
    return replace(finding, message=f"the {what} analysis did not finish: {finding.message} "
                                    f"(fx's result is kept)")
