"""The fx analysis's model: the target built on the meta device (a class from its defaults and
recipes, retrying the next candidate when the invented values, not the code, made the trace
fail), then traced.

What the job needs is imported with this module, before the workspace's code runs: a module that
patches builtins (``builtins.len = ...``) must not break the job's own imports (``re`` among them)."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Callable

from fxscope.job.analyses import REGISTRY, AnalysisContext
from fxscope.job.building import build_class, needs_arguments, parameterless_failure, say_invented
from fxscope.job.construct import Attempt, AutomaticBuild
from fxscope.job.failures import error_finding
from fxscope.job.hypothesis import build_fault
from fxscope.job.skips import name_errors, skipped_findings
from fxscope.job.stages import Ending, JobState, ended
from fxscope.job.target import target_module
from fxscope.model.outcome import TargetOutcome

__all__ = ["Traced", "build_and_trace"]


@dataclass(frozen=True)
class Traced:
    """fx traced the target: its outcome, to which the other analyses add theirs."""

    outcome: TargetOutcome


def _skip_for(context: AnalysisContext, blocked: Mapping[str, Any]) -> Ending:
    module = sys.modules[target_module(context.job.target) or ""]
    return ended("skipped", skipped_findings(context.job.target, blocked, module)), None


def _build(factory: Any, state: JobState, rejected: list[Attempt]) -> Ending | Any:
    """The built model (a :class:`fxscope.trace.build.BuiltModel`), or the stage that ends the job."""
    from fxscope.trace.build import BuildError, build_model

    context = state.context
    job, ctx_user = context.job, context.is_user_file

    def build(make: Callable[[], Any]) -> Any:
        return build_model(make, device=job.config.device, is_user_file=ctx_user, exact_meta=bool(job.target.inputs))

    if job.target.kind != "class":
        try:
            return build(factory)
        except BuildError as be:
            cause = be.__cause__ or be
            blocked = name_errors([cause], state.home)
            if blocked:
                return _skip_for(context, blocked)
            return ended("error", [error_finding("FXS401", f"the factory raised {be}", cause, ctx_user,
                                                 context.fallback)]), cause
    automatic = build_class(factory, job.target, build, ctx_user, tuple(a.recipe for a in rejected))
    automatic.attempts[:0] = rejected
    if automatic.built is None:
        blocked = name_errors((a.cause for a in automatic.attempts), state.home)
        if blocked:
            return _skip_for(context, blocked)
        fatal = automatic.exhausted or parameterless_failure(factory, automatic)
        if fatal is not None:  # too large for the limits, or a constructor without parameters that raises
            message = f"the constructor raised {type(fatal).__name__}: {fatal}"
            return ended("error", [error_finding("FXS401", message, fatal, ctx_user, context.fallback)]), fatal
        return ended("skipped", [needs_arguments(job.target, automatic, ctx_user, context.fallback)]), None
    assert automatic.recipe is not None
    state.build = automatic.recipe
    return automatic


def _inputs(built: Any, context: AnalysisContext) -> Mapping[str, Any] | None:
    """The fx analysis's example inputs (meta tensors), None without any or when invalid (a warning)."""
    target = context.job.target
    if not (target.inputs or built.inputs):
        return None
    from fxscope.trace.inputs import resolve_inputs

    try:
        return resolve_inputs(target.inputs or None, built.inputs, built.model)
    except ValueError as e:
        context.warnings.append(f"example inputs ignored: {e}")
        return None


def build_and_trace(factory: Any, state: JobState, rejected: list[Attempt]) -> Traced | Ending | Attempt:
    """Build the target (a class: from its candidates, except the ``rejected`` ones) and run fx:
    fx's outcome, the stage that ends the job (nothing built, the tracer failed, a name fxscope left
    unset), or the :class:`Attempt` of a build with invented values whose failure is their fault
    (the caller tries the next candidate)."""
    context = state.context
    outcome = _build(factory, state, rejected)
    if isinstance(outcome, tuple):
        return outcome
    recipe = outcome.recipe if isinstance(outcome, AutomaticBuild) else None
    built = outcome.built if isinstance(outcome, AutomaticBuild) else outcome
    state.device = built.device
    inputs = _inputs(built, context)
    result = REGISTRY["fx"].run(built, inputs, context)
    traced = result.outcome or ended("traced", result.findings)
    if result.error is not None:  # the tracer itself failed: its located answer ends the job
        return traced, result.error
    blocked = name_errors((f.message for f in traced.findings if f.code == "FXS107"), state.home)
    if blocked:  # forward read a name fxscope left unset: not an error plain Python would have
        return _skip_for(context, blocked)
    fault = build_fault(recipe, built.model, [f.to_json() for f in traced.findings], inputs)
    if fault is not None and recipe is not None:  # the made-up values' fault, not the code's
        state.build = None
        return Attempt(recipe, fault)
    if recipe is not None and recipe.invented:
        findings = say_invented(traced.findings, recipe, context.job.target.qualname or "", context.is_user_file)
        traced = replace(traced, findings=findings)
    return Traced(traced)
