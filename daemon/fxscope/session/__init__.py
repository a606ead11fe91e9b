"""The workspace session: the long-lived core that every front end shares, one
:class:`Workspace` per root (the socket daemon, ``fxscope watch`` and the language server are thin
transports over it).

A Workspace wires parts with one owner each: :class:`DocumentStore` (open buffers, the only place
document versions live), :class:`Scheduler` (debounce, rounds, cancellation; the only code that
starts threads), :class:`ResultStore` (typed outcomes indexed once per file) and the files and
targets of the root; it owns the configuration and the engine.

It sits above :mod:`fxscope.engine` (which checks an immutable snapshot) and :mod:`fxscope.report`
(whose views it uses to answer per-file findings), and below the front ends.
"""

from fxscope.session.clock import Clock, MonotonicClock, Timer
from fxscope.session.data import (FileFindings, ProgressEvent, ResultsEvent, RunSummary, SessionSettings,
                                  WorkspaceStatus)
from fxscope.session.documents import DocumentStore
from fxscope.session.plans import RoundPlan, RoundSource
from fxscope.session.scheduler import Scheduler
from fxscope.session.store import ResultStore
from fxscope.session.workspace import Workspace

__all__ = [
    "Clock",
    "DocumentStore",
    "FileFindings",
    "MonotonicClock",
    "ProgressEvent",
    "ResultStore",
    "ResultsEvent",
    "RoundPlan",
    "RoundSource",
    "RunSummary",
    "Scheduler",
    "SessionSettings",
    "Timer",
    "Workspace",
    "WorkspaceStatus",
]
