"""The workspace session: the long-lived core that every front end shares, one
:class:`Workspace` per root (the socket daemon, ``fxscope watch`` and the language server are thin
transports over it).

It sits above :mod:`fxscope.engine` (which checks an immutable snapshot) and :mod:`fxscope.report`
(whose views it uses to answer per-file findings), and below the front ends.
"""

from fxscope.session.clock import Clock, MonotonicClock, Timer
from fxscope.session.data import FileFindings, ProgressEvent, ResultsEvent, SessionSettings, WorkspaceStatus
from fxscope.session.workspace import Workspace

__all__ = [
    "Clock",
    "FileFindings",
    "MonotonicClock",
    "ProgressEvent",
    "ResultsEvent",
    "SessionSettings",
    "Timer",
    "Workspace",
    "WorkspaceStatus",
]
