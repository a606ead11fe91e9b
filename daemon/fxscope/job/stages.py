"""What a job carries from stage to stage, and the outcome of a stage that ends it early."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from fxscope.job.analyses import AnalysisContext, findings_of
from fxscope.model.finding import Finding
from fxscope.model.outcome import TargetOutcome
from fxscope.model.recipe import Recipe

__all__ = ["Ending", "JobState", "ended", "findings_of"]

#: A finished stage: the job's outcome so far, and the exception behind it (its files are
#: dependencies of the result too), if any.
Ending = tuple[TargetOutcome, BaseException | None]


def ended(status: str, findings: Iterable[Mapping[str, Any] | Finding] = ()) -> TargetOutcome:
    """The outcome of a job that ends with no traced module: ``status`` and ``findings``."""
    return TargetOutcome(status, findings=findings_of(findings))


@dataclass
class JobState:
    """A job in progress: the analysis context (its warnings are the result's), the device the
    fx model was built on, the recipe it was built from, and the workspace module that defines
    the target (to tell a name fxscope left unset from a real error)."""

    context: AnalysisContext
    home: Any = None
    device: str | None = None
    build: Recipe | None = None
    #: When the job started (``time.monotonic()``): the analyses on inferred inputs stop before
    #: the job's timeout, so fx's result is kept.
    started: float = field(default_factory=time.monotonic)
