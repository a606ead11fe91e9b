"""A worker fault (timeout, crash, exit, exception) read as a typed :class:`WorkerFault` and turned
into a target result with a finding.

Part of a fault (``exception`` and ``exit``: type, message, traceback) is written by the job's own
process, which runs model code, so :meth:`WorkerFault.from_json` checks every field and drops
anything of the wrong type rather than trusting it.

>>> f = WorkerFault.from_json({"fault": "exception", "type": "KeyError", "message": ["x"],
...                            "traceback": [{"file": "/ws/m.py", "line": "3"}, 7]})
>>> f.kind, f.exception_type, f.message, f.traceback
('exception', 'KeyError', None, ())
>>> r = fault_result(WorkerFault("crash", signal=11, signal_name="SIGSEGV"), {"file": "/ws/m.py", "line": 3}, "/ws")
>>> r.status, r.findings[0].code, r.findings[0].location.line, r.fault
('error', 'FXS404', 3, 'crash')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

from fxscope.model.codes import finding_dict
from fxscope.model.finding import Finding
from fxscope.model.outcome import TargetOutcome
from fxscope.model.fault import FAULTS

__all__ = ["StackFrame", "WorkerFault", "fault_result"]

_MAX_FRAMES = 200


@dataclass(frozen=True)
class StackFrame:
    """One frame of a traceback or of a stack dump: absolute ``file``, 1-based ``line``."""

    file: str
    line: int
    name: str = ""

    @classmethod
    def parse(cls, value: Any) -> StackFrame | None:
        """The frame ``value`` describes, or ``None`` when it is not a well-formed frame."""
        if not isinstance(value, Mapping):
            return None
        file, line, name = value.get("file"), value.get("line"), value.get("name", "")
        if not isinstance(file, str) or not _is_int(line) or line < 1:
            return None
        return cls(file, line, name if isinstance(name, str) else "")


@dataclass(frozen=True)
class WorkerFault:
    """A job's fault: its ``kind`` (one of :data:`fxscope.model.fault.FAULTS`, or ``unknown``), what is known of the
    process's end (``exit_code``, ``signal``), the ``timeout`` it exceeded, the exception's type
    and message, the frames (``traceback`` of an exception or exit, ``stack`` dumped at a timeout
    or crash; outermost first) and the job's ``output``."""

    kind: str
    message: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    signal_name: str | None = None
    timeout: float | None = None
    exception_type: str | None = None
    traceback: tuple[StackFrame, ...] = ()
    stack: tuple[StackFrame, ...] = ()
    output: str = ""

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> WorkerFault:
        """Read a fault dict (``{"fault": kind, ...}``), keeping only well-typed fields."""
        kind = raw.get("fault")
        timeout = raw.get("timeout")
        return cls(
            kind=kind if isinstance(kind, str) and kind in FAULTS else "unknown",
            message=_str(raw.get("message")),
            exit_code=raw.get("exit_code") if _is_int(raw.get("exit_code")) else None,
            signal=raw.get("signal") if _is_int(raw.get("signal")) else None,
            signal_name=_str(raw.get("signal_name")),
            timeout=float(timeout) if _is_int(timeout) or isinstance(timeout, float) else None,
            exception_type=_str(raw.get("type")),
            traceback=_frames(raw.get("traceback")),
            stack=_frames(raw.get("stack")),
            output=_str(raw.get("output")) or "",
        )

    @property
    def cacheable(self) -> bool:
        """Every outcome of the target's own process is cached like a result: timeouts (whether
        the child was busy or waiting), crashes, exits and uncaught exceptions, so an unchanged
        workspace never pays a timeout twice; an edit of a recorded dependency or ``retry_faults``
        runs it again. Not cached: cancellations (they depend on the caller) and the worker itself
        dying or failing to start (neither a signal nor an exit status of the job's process is
        known: nothing was learnt about the model)."""
        if self.kind in ("exit", "exception", "timeout"):
            return True
        if self.kind == "crash":
            return self.exit_code is not None or self.signal is not None
        return False


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _frames(value: Any) -> tuple[StackFrame, ...]:
    if not isinstance(value, list):
        return ()
    frames = (StackFrame.parse(v) for v in value[-_MAX_FRAMES:])
    return tuple(f for f in frames if f is not None)


def _innermost_user_frame(frames: tuple[StackFrame, ...], root: str) -> dict[str, Any] | None:
    prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
    for frame in reversed(frames):
        if frame.file.startswith("<") and frame.file.endswith(">"):
            continue  # <frozen importlib._bootstrap>, <string>: no file, never a location
        f = os.path.abspath(frame.file)
        if f.startswith(prefix) and f"{os.sep}site-packages{os.sep}" not in f:
            return {"file": f, "line": frame.line}
    return None


def _finding(fault: WorkerFault, fallback: Mapping[str, Any], root: str) -> dict[str, Any]:
    """The FXS403/FXS404 finding for ``fault``, at its innermost workspace frame if it has one."""
    frames = fault.traceback if fault.kind in ("exit", "exception") else fault.stack
    found = _innermost_user_frame(frames, root)
    loc = found or dict(fallback)
    if fault.kind == "timeout":
        where = f" (stuck at line {loc['line']})" if found else ""
        timeout = fault.timeout if fault.timeout is not None else "the configured"
        return finding_dict("FXS403", f"tracing did not finish within {timeout} s{where}", **loc)
    if fault.kind == "exit":
        code = fault.message if fault.message is not None else fault.exit_code
        return finding_dict("FXS404", f"model code called sys.exit({code!r}); the tracing process ended", **loc)
    if fault.kind == "crash":
        if fault.signal_name:
            why = f"the tracing process was killed by {fault.signal_name}"
            if fault.signal == 9:
                why += " (out of memory, or killed from outside)"
        elif fault.exit_code == 0 and fault.message:  # ended, but its result was unusable
            why = f"the trace gave no usable result: {fault.message}"
        elif fault.exit_code is not None:
            why = f"the tracing process exited with status {fault.exit_code} (os._exit or a native abort)"
        else:  # the worker itself died or could not start: nothing is known about the model
            why = f"the trace could not run: {fault.message or 'the worker died'}"
        return finding_dict("FXS404", why, **loc)
    if fault.kind == "exception":
        if fault.exception_type == "MemoryError":
            text = "the tracing process ran out of memory (memory-limit-mb)"
        else:
            what = ": ".join(part for part in (fault.exception_type or "an exception", fault.message) if part)
            text = f"the tracing process failed: {what}"
        return finding_dict("FXS404", text, **loc)
    return finding_dict("FXS404", f"the tracing process failed ({fault.kind})", **loc)


def fault_result(fault: WorkerFault, fallback: Mapping[str, Any], root: str) -> TargetOutcome:
    """A target outcome (status ``error``) for a worker fault, its finding at the innermost
    workspace frame or at ``fallback`` (``file``, ``line``); its ``fault`` names the kind
    (``timeout``, ``crash``, ``exit``, ``exception``) so a cached fault can be retried."""
    return TargetOutcome("error", findings=(Finding.from_json(_finding(fault, fallback, root)),),
                         output=fault.output or None, fault=fault.kind)
