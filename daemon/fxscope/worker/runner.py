"""The default runner of the worker's children: one trace job (:mod:`fxscope.job`) in a forked child.

The job itself (import, build, analyses, result) is :func:`fxscope.job.run.run_job`; this module
binds it to the process: the OS sandbox's refusals explained as FXS408, and :func:`warm_up`, which
the zygote calls once before forking.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from fxscope.job.run import run_job
from fxscope.job.trace_job import TraceJob
from fxscope.worker.sandbox import denial_of

#: Set to "1" in the zygote's environment when the workspace runs the compile or export analysis:
#: :func:`warm_up` then also imports torch._dynamo and torch.export before the first fork.
WARM_PT2_ENV = "FXSCOPE_WARM_PT2"

__all__ = ["WARM_PT2_ENV", "run_trace_job", "warm_up"]


def _sandbox_cause(e: BaseException) -> tuple[str, str, str | None] | None:
    """FXS408 for an exception that is the sandbox refusing a write or a connection."""
    denial = denial_of(e)
    return None if denial is None else ("FXS408", denial.message(), None)


def run_trace_job(raw_job: Mapping[str, Any]) -> dict[str, Any]:
    """Run one trace job (``raw_job``: a :class:`TraceJob` as JSON) in this child; the result is
    described in :mod:`fxscope.job.run`."""
    from fxscope.trace.classify import EXTERNAL_CAUSES

    if _sandbox_cause not in EXTERNAL_CAUSES:  # a write or connection the sandbox refused
        EXTERNAL_CAUSES.append(_sandbox_cause)
    return run_job(TraceJob.from_json(raw_job))


def warm_up() -> None:
    """Called once in the zygote, before any fork: import what every job imports and fill the
    pure-Python caches that the first trace in a process builds (torch's table of overridable
    functions, sysconfig's paths), so each forked child starts warm. Runs no torch operator."""
    import site
    import sysconfig

    import torch
    import torch.overrides

    import fxscope.job.analyses  # noqa: F401
    import fxscope.trace.analysis  # noqa: F401
    import fxscope.trace.build
    from fxscope.trace._torch_compat import warm_imports, warm_override_tables

    warm_imports()  # imported lazily by nn.Module construction
    fxscope.trace.build.warm_up()

    sysconfig.get_paths()
    site.getsitepackages()
    torch.overrides.get_overridable_functions()
    warm_override_tables()
    if os.environ.get(WARM_PT2_ENV) == "1":  # the workspace runs the compile or export analysis
        from fxscope.trace.pt2 import warm_up as warm_pt2

        warm_pt2()
