"""The incremental engine shared by every front end: :class:`Engine` checks targets for an
immutable snapshot. :class:`~fxscope.session.Workspace`, one layer up (over :mod:`fxscope.report`),
owns one root's long-lived state."""

from fxscope.engine.engine import Engine, ProgressEvent, installed_torch_version
from fxscope.engine.results import TargetResult

__all__ = ["Engine", "ProgressEvent", "TargetResult", "installed_torch_version"]
