"""The analyses that run the model on real tensors (torch.compile, torch.export): each on a model
of its own, built on the CPU the same way (torch's generator seeded), so what one analysis's
forward changes in the model (lazy initialisation, a lazily copied network) never reaches the next.

Building costs time, so a model is built per analysis only when more than one of them runs
(the fx analysis always has its own, on the meta device)."""

from __future__ import annotations

import os
import tempfile
import traceback
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, Callable

from fxscope.job.analyses import Analysis, AnalysisContext, AnalysisResult
from fxscope.job.failures import error_finding
from fxscope.job.stages import JobState, ended
from fxscope.model.outcome import Graphs, TargetOutcome

__all__ = ["run_real_analyses"]


def _private_compile_caches() -> None:
    """torch.compile's on-disk caches (inductor's cache, with Dynamo's profile of which sizes were
    dynamic; triton's) in the job's temporary directory: nothing outlives the job, and no earlier
    run's profile changes what this one reports."""
    from fxscope.trace.pt2 import CACHE_DIR_ENV

    scratch = tempfile.gettempdir()  # the job's own directory (see fxscope.worker.child)
    os.environ[CACHE_DIR_ENV] = os.path.join(scratch, "torchinductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(scratch, "triton")


def _names(analyses: list[Analysis]) -> str:
    return " and ".join(a.name for a in analyses)


def _build_failed(error: BaseException, remaining: list[Analysis], outcome: TargetOutcome,
                  state: JobState, fx_ran: bool) -> TargetOutcome:
    """With fx, a model that cannot be built on the CPU skips the remaining analyses (a warning,
    fx's result kept); without fx it is the target's FXS401."""
    context = state.context
    if fx_ran:
        context.warnings.append(f"{_names(remaining)} analysis skipped: the model could not be built on the "
                                f"CPU: {error}")
        return outcome
    cause = error.__cause__ or error
    what = "factory" if context.job.target.kind == "factory" else "constructor"
    return ended("error", [error_finding("FXS401", f"the {what} raised {error}", cause, context.is_user_file,
                                         context.fallback)])


def _build_real(factory: Callable[[], Any], context: AnalysisContext, inputs: Mapping[str, Any] | None) -> Any:
    from fxscope.trace.pt2 import build_real

    target = context.job.target
    return build_real(factory, inputs or target.inputs, target.concrete_args, is_user_file=context.is_user_file)


def _run_one(analysis: Analysis, real: Any, context: AnalysisContext) -> AnalysisResult:
    """``analysis`` on ``real``; a bug in the analysis is still a located answer (FXS107)."""
    try:
        return analysis.run(real, real.inputs, context)
    except Exception as e:  # noqa: BLE001 - an analysis (a plug-in too) may raise anything
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return AnalysisResult((error_finding("FXS107", f"internal error in the {analysis.name} analysis: {detail}", e,
                                             context.is_user_file, context.fallback),), error=e)


def _added(outcome: TargetOutcome, name: str, result: AnalysisResult, fx_ran: bool) -> TargetOutcome:
    """``outcome`` with ``result`` (of the analysis called ``name``) added: its findings and
    graphs, its summary under its name; without fx, a failing analysis fails the target."""
    graphs = [*(outcome.graphs.to_json() if outcome.graphs is not None else ()), *result.graphs]
    analyses = dict(outcome.analyses)
    if result.summary is not None:
        analyses[name] = result.summary
    status = "failed" if result.failed and not fx_ran else outcome.status
    return replace(outcome, status=status, findings=outcome.findings + result.findings,
                   graphs=Graphs(json=graphs) if graphs else outcome.graphs, analyses=MappingProxyType(analyses))


def run_real_analyses(factory: Callable[[], Any], analyses: list[Analysis], outcome: TargetOutcome,
                      state: JobState, fx_ran: bool, inputs: Mapping[str, Any] | None = None) -> TargetOutcome:
    """``outcome`` with ``analyses`` (those built on the CPU) added, each run on a model built for
    it alone: their findings and graphs, their summaries under their names, their warnings.
    Without fx, a failing analysis (an export that fails) leaves the target ``failed``.
    ``inputs``: example input specs inferred for a class (else the target's configured ones)."""
    from fxscope.trace.build import BuildError
    from fxscope.trace.pt2 import NoExampleInputs

    if not analyses:
        return outcome
    _private_compile_caches()
    context = state.context
    for index, analysis in enumerate(analyses):
        try:
            real = _build_real(factory, context, inputs)
        except BuildError as be:
            return _build_failed(be, analyses[index:], outcome, state, fx_ran)
        except NoExampleInputs as e:
            context.warnings.append(f"{_names(analyses[index:])} analysis {e}")
            return outcome
        result = _run_one(analysis, real, context)
        outcome = _added(outcome, analysis.name, result, fx_ran)
        if result.error is not None:
            return outcome
    return outcome
