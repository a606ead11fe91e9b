"""Errors that end a check with one clear line and exit status 2 (never 1, which means findings).

Every layer may raise them; front ends print ``str(error)`` as is (the CLI as ``fxscope: error:``,
the daemon as an error reply, the language server as a message).

>>> str(WorkerStartError("the worker did not start within 5 s (still importing preload 'x')"))
"the worker did not start within 5 s (still importing preload 'x')"
"""

from __future__ import annotations

__all__ = ["CheckError", "CheckInterrupted", "TorchUnavailableError", "WorkerStartError"]


class CheckError(Exception):
    """A check could not give a complete answer; ``str()`` is one line for the user."""


class WorkerStartError(CheckError, RuntimeError):
    """The worker process (torch and the ``preload`` modules) did not start."""


class TorchUnavailableError(WorkerStartError):
    """The interpreter that runs the worker has no torch fxscope supports (missing, broken or too
    old): an environment error, with the install command in its message."""


class CheckInterrupted(CheckError):
    """The check stopped before every target had a result (workers or daemon stopped under it)."""
