"""The result bodies a job can end with, and what a job carries from stage to stage."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from fxscope.job.analyses import AnalysisContext

__all__ = ["JobState", "body"]


def body(status: str, findings: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A result body with no traced module: ``status`` and ``findings``."""
    return {"status": status, "modules": [], "nodes": 0, "findings": list(findings or [])}


@dataclass
class JobState:
    """A job in progress: the analysis context (its warnings are the result's), the device the
    fx model was built on, the recipe it was built from (JSON), and the workspace module that
    defines the target (to tell a name fxscope left unset from a real error)."""

    context: AnalysisContext
    home: Any = None
    device: str | None = None
    build: dict[str, Any] | None = None
    #: When the job started (``time.monotonic()``): the analyses on inferred inputs stop before
    #: the job's timeout, so fx's result is kept.
    started: float = field(default_factory=time.monotonic)

    def fields(self) -> dict[str, Any]:
        """What every result carries besides its body: warnings, and device and build once known."""
        out: dict[str, Any] = {"warnings": self.context.warnings}
        if self.device is not None:
            out["device"] = self.device
        if self.build is not None:
            out["build"] = self.build
        return out
