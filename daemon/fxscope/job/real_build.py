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
from typing import Any, Callable

from fxscope.job.analyses import Analysis, AnalysisContext
from fxscope.job.failures import error_finding
from fxscope.job.stages import JobState, body

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


def _build_failed(error: BaseException, remaining: list[Analysis], report: dict[str, Any],
                  state: JobState, fx_ran: bool) -> dict[str, Any]:
    """With fx, a model that cannot be built on the CPU skips the remaining analyses (a warning,
    fx's result kept); without fx it is the target's FXS401."""
    context = state.context
    if fx_ran:
        context.warnings.append(f"{_names(remaining)} analysis skipped: the model could not be built on the "
                                f"CPU: {error}")
        return report
    cause = error.__cause__ or error
    what = "factory" if context.job.target.kind == "factory" else "constructor"
    return body("error", [error_finding("FXS401", f"the {what} raised {error}", cause, context.is_user_file,
                                        context.fallback)])


def _build_real(factory: Callable[[], Any], context: AnalysisContext, inputs: Mapping[str, Any] | None) -> Any:
    from fxscope.trace.pt2 import build_real

    target = context.job.target
    return build_real(factory, inputs or target.inputs, target.concrete_args, is_user_file=context.is_user_file)


def run_real_analyses(factory: Callable[[], Any], analyses: list[Analysis], report: dict[str, Any],
                      state: JobState, fx_ran: bool, inputs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``report`` with ``analyses`` (those built on the CPU) added, each run on a model built for
    it alone: their findings and graphs, their summaries under their names, their warnings.
    Without fx, a failing analysis (an export that fails) leaves the target ``failed``.
    ``inputs``: example input specs inferred for a class (else the target's configured ones)."""
    from fxscope.trace.build import BuildError
    from fxscope.trace.pt2 import NoExampleInputs

    if not analyses:
        return report
    _private_compile_caches()
    context = state.context
    for index, analysis in enumerate(analyses):
        try:
            real = _build_real(factory, context, inputs)
        except BuildError as be:
            return _build_failed(be, analyses[index:], report, state, fx_ran)
        except NoExampleInputs as e:
            context.warnings.append(f"{_names(analyses[index:])} analysis {e}")
            return report
        try:
            result = analysis.run(real, real.inputs, context)
        except Exception as e:  # noqa: BLE001 - a bug in an analysis must still give a located answer
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            report["findings"].append(error_finding(
                "FXS107", f"internal error in the {analysis.name} analysis: {detail}", e, context.is_user_file,
                context.fallback))
            return report
        report["findings"].extend(result.findings)
        report.setdefault("graphs", []).extend(result.graphs)
        if result.summary is not None:
            report[analysis.name] = result.summary
        if result.failed and not fx_ran:
            report["status"] = "failed"
    return report
