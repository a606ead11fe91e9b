"""The default runner of the worker's children: one trace job (:mod:`fxscope.job`) in a forked child.

The job itself (import, build, analyses, outcome) is :func:`fxscope.job.run.run_job`; this module
binds it to the process: the OS sandbox's refusals explained as FXS408, and :func:`warm_up`
(:func:`fxscope.job.warm.warm_up`), which the zygote calls once before forking.
"""

from __future__ import annotations

from collections.abc import Mapping

from fxscope.job.run import run_job
from fxscope.job.trace_job import TraceJob
from fxscope.job.warm import WARM_ANALYSES_ENV, warm_up
from fxscope.worker.sandbox import denial_of

__all__ = ["WARM_ANALYSES_ENV", "run_trace_job", "warm_up"]


def _sandbox_cause(e: BaseException) -> tuple[str, str, str | None] | None:
    """FXS408 for an exception that is the sandbox refusing a write or a connection."""
    denial = denial_of(e)
    return None if denial is None else ("FXS408", denial.message(), None)


def run_trace_job(raw_job: Mapping[str, object]) -> dict[str, object]:
    """Run one trace job (``raw_job``: a :class:`TraceJob` as JSON) in this child; the result is
    its :class:`~fxscope.model.outcome.TargetOutcome` as JSON (see :mod:`fxscope.job.run`)."""
    from fxscope.trace.classify import EXTERNAL_CAUSES

    if _sandbox_cause not in EXTERNAL_CAUSES:  # a write or connection the sandbox refused
        EXTERNAL_CAUSES.append(_sandbox_cause)
    return run_job(TraceJob.from_json(raw_job)).to_json()
