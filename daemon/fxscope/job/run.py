"""One trace job, start to end: import the target, build it, run its analyses, return its typed
:class:`~fxscope.model.outcome.TargetOutcome`.

The outcome holds the trace (``status``, ``modules``, ``findings`` with absolute paths, ``graphs``,
``nodes``), the summaries of the analyses that ran (``analyses``), ``files`` (root-relative path ->
sha256 of the content used), ``device``, ``build`` (the recipe a class was built from),
``warnings`` and ``torch``. Import and build failures are findings (FXS402, FXS401) with status
``error``, never exceptions; a discovered class whose constructor takes arguments and raises
without them is skipped (FXS405). When a module was missing, ``files`` also maps the places that
would have provided it to ``"absent"`` (``dir/`` for a package directory; absolute when outside
the root), so the result is stale once one of them appears. Workspace modules are compiled from
their source, never from ``__pycache__``.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable

from fxscope.job.analyses import AnalysisContext, load_plugins, selected
from fxscope.job.class_analyses import run_class_analyses
from fxscope.job.construct import Attempt
from fxscope.job.failures import absent_candidates, error_finding, missing_module, user_file_predicate
from fxscope.job.meta_build import Traced, build_and_trace
from fxscope.job.overlay import serve_from_source
from fxscope.job.real_build import run_real_analyses
from fxscope.job.safe_module import run_script
from fxscope.job.skips import import_of_skipped, skipped_findings, uses_skipped
from fxscope.job.stages import Ending, JobState, ended
from fxscope.job.target import import_target, prepare_process, rebound, target_module
from fxscope.job.touched import error_files, touched_files
from fxscope.job.trace_job import TraceJob
from fxscope.model.location import Location
from fxscope.model.outcome import TargetOutcome

__all__ = ["run_job"]


def _finish(stage: Ending, state: JobState) -> TargetOutcome:
    """The stage's outcome with the job's fields and the files the result depends on."""
    import torch

    outcome, error = stage
    root, is_user_file = state.context.job.root, state.context.is_user_file
    files = touched_files(Path(root))
    if error is not None:  # files that failed to import are not in sys.modules
        for rel, digest in error_files(error, root, is_user_file).items():
            files.setdefault(rel, digest)
    missing = missing_module(error)
    if missing:
        files.update(absent_candidates(missing, root))
    return replace(outcome, files=MappingProxyType(files), warnings=tuple(state.context.warnings),
                   torch=torch.__version__, device=state.device, build=state.build)


def _skipped(blocked: Mapping[str, Any], module: Any, state: JobState) -> Ending:
    """The outcome of a target that reads names a statement fxscope did not run would set."""
    return ended("skipped", skipped_findings(state.context.job.target, blocked, module)), None


def _import_failed(e: BaseException, state: JobState) -> Ending:
    """FXS402 at the failing line, or skipped when the failure is a statement fxscope did not run."""
    target = state.context.job.target
    module = sys.modules.get(target_module(target) or "")
    blocked = uses_skipped(target, module) if isinstance(e, AttributeError) else {}
    if blocked:  # the class's own statement was skipped (it reads a name that was)
        return _skipped(blocked, module, state)
    imported = import_of_skipped(e)  # `from script import NAME`, NAME set by a statement not run
    if imported is not None:
        return _skipped(imported[1], imported[0], state)
    msg = f"{type(e).__name__}: {e}" if not isinstance(e, SyntaxError) else f"SyntaxError: {e.msg}"
    context = state.context
    finding = error_finding("FXS402", f"could not import: {msg}", e, context.is_user_file, context.fallback)
    return ended("error", [finding]), e


def _import(state: JobState) -> Callable[[], Any] | Ending:
    """The target's class or factory, or the stage that ends the job (an import that failed, a
    class that reads what fxscope did not run, a name bound to something else)."""
    target = state.context.job.target
    try:
        factory = import_target(state.context.job)
    except BaseException as e:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if isinstance(e, SystemExit):
            raise
        return _import_failed(e, state)
    state.home = sys.modules.get(target_module(target) or "")
    blocked = uses_skipped(target, state.home)
    if blocked:  # a notebook (or script) class that reads what a statement fxscope did not run sets
        return _skipped(blocked, state.home, state)
    if target.kind == "class":
        why = rebound(factory, target)
        if why:  # `Swish = nn.SiLU`: the name no longer names the class defined there
            state.context.warnings.append(why)
            return ended("skipped"), None
    return factory


def _analyse(factory: Callable[[], Any], state: JobState) -> Ending:
    """Run the target's analyses of the job's phase: fx on its meta build (retrying candidates
    whose invented values failed), then those on real tensors, each on a model of its own. The
    ``analyses`` phase runs only the latter, on the model its fx phase built (``job.build``)."""
    context = state.context
    job = context.job
    analyses = selected(job.config, job.target.id, context.warnings)
    fx_ran = any(a.device == "meta" for a in analyses) and job.phase != "analyses"
    traced = ended("traced")
    if fx_ran:
        rejected: list[Attempt] = []  # builds with invented values whose failure was the values' fault
        while True:
            outcome = build_and_trace(factory, state, rejected)
            if not isinstance(outcome, Attempt):
                break
            rejected.append(outcome)
        if not isinstance(outcome, Traced):
            return outcome
        traced = outcome.outcome
    elif job.phase == "analyses":
        state.build = job.build
    real = [a for a in analyses if a.device == "cpu"] if job.phase != "fx" else []
    # the analyses phase follows an fx phase: it reports like a job whose fx ran (a model that does
    # not build on the CPU is a warning, a failing analysis does not fail the target)
    after_fx = fx_ran or job.phase == "analyses"
    target = job.target
    if real and target.kind == "class" and not target.inputs:  # inputs inferred for the class
        return run_class_analyses(factory, real, traced, state, after_fx), None
    return run_real_analyses(factory, real, traced, state, after_fx), None


def _phase_import_failed(stage: Ending, state: JobState) -> Ending:
    """An ``analyses`` phase whose target no longer imports (or is skipped): its fx phase reports
    the import once; this phase says why its analyses did not run, as a warning."""
    outcome, error = stage
    names = " and ".join(a.name for a in selected(state.context.job.config, state.context.job.target.id)
                         if a.device == "cpu") or "the"
    why = outcome.findings[0].message if outcome.findings else f"the target was {outcome.status}"
    state.context.warnings.append(f"{names} analysis did not run: {why}")
    return ended(outcome.status), error


def run_job(job: TraceJob) -> TargetOutcome:
    """Import, build and analyse ``job``'s target (in this process, which the job may change: run
    it in a child of its own); see the module docstring for the outcome."""
    import torch

    # Parallelism comes from the pool's workers: one intra-op thread per child.
    torch.set_num_threads(1)
    prepare_process(job)
    is_user_file = user_file_predicate(job.root)
    context = AnalysisContext(job, is_user_file, Location(job.fallback_file, max(job.fallback_line, 1)))
    state = JobState(context)
    serve_from_source(is_user_file, root=job.root, run_script=run_script)
    load_plugins(job.config, context.warnings)
    imported = _import(state)
    if isinstance(imported, tuple):
        return _finish(_phase_import_failed(imported, state) if job.phase == "analyses" else imported, state)
    return _finish(_analyse(imported, state), state)
