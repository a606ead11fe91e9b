"""A job's fault (timeout, crash, exit, exception) turned into a target result with a finding.

The worker reads every fault strictly (:meth:`fxscope.model.fault.Fault.from_json`) before it
passes one on; :func:`read_fault` reads it once more at the engine, and a dict that is not a
fault (it cannot come from the worker, but the engine never trusts its input) becomes a crash that
says so, never an exception of fxscope's own.

>>> read_fault({"fault": "exception", "type": "KeyError", "message": ["x"]}).message
"the job's answer is not a well-formed fault (message is not a str)"
>>> r = fault_result(Fault("crash", signal=11, signal_name="SIGSEGV"), {"file": "/ws/m.py", "line": 3}, "/ws")
>>> r.status, r.findings[0].code, r.findings[0].location.line, r.fault
('error', 'FXS404', 3, 'crash')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from fxscope.model.codes import finding_dict
from fxscope.model.fault import Fault, Frame
from fxscope.model.finding import Finding
from fxscope.model.outcome import TargetOutcome

__all__ = ["cacheable", "fault_result", "read_fault"]


def read_fault(raw: Mapping[str, object]) -> Fault:
    """The fault ``raw`` is; a crash saying why when it is not a well-formed one."""
    try:
        return Fault.from_json(raw)
    except ValueError as problem:
        output = raw.get("output")
        return Fault("crash", f"the job's answer is not a well-formed fault ({problem})",
                     output=output if isinstance(output, str) else None)


def cacheable(fault: Fault) -> bool:
    """Every outcome of the target's own process is cached like a result: timeouts (whether the
    child was busy or waiting), crashes, exits and uncaught exceptions, so an unchanged workspace
    never pays a timeout twice; an edit of a recorded dependency or ``retry_faults`` runs it again.
    Not cached: cancellations (they depend on the caller) and the worker itself dying or failing to
    start (neither a signal nor an exit status of the job's process is known: nothing was learnt
    about the model)."""
    if fault.kind in ("exit", "exception", "timeout"):
        return True
    if fault.kind == "crash":
        return fault.exit_code is not None or fault.signal is not None
    return False


def _innermost_user_frame(frames: tuple[Frame, ...], root: str) -> dict[str, Any] | None:
    prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
    for frame in reversed(frames):
        if frame.line is None or frame.line < 1:
            continue  # a dump that did not know the line: not a location
        if frame.file.startswith("<") and frame.file.endswith(">"):
            continue  # <frozen importlib._bootstrap>, <string>: no file, never a location
        f = os.path.abspath(frame.file)
        if f.startswith(prefix) and f"{os.sep}site-packages{os.sep}" not in f:
            return {"file": f, "line": frame.line}
    return None


def _finding(fault: Fault, fallback: Mapping[str, Any], root: str) -> dict[str, Any]:
    """The FXS403/FXS404 finding for ``fault``, at its innermost workspace frame if it has one."""
    frames = (fault.traceback if fault.kind in ("exit", "exception") else fault.stack) or ()
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


def fault_result(fault: Fault, fallback: Mapping[str, Any], root: str) -> TargetOutcome:
    """A target outcome (status ``error``) for a worker fault, its finding at the innermost
    workspace frame or at ``fallback`` (``file``, ``line``); its ``fault`` names the kind
    (``timeout``, ``crash``, ``exit``, ``exception``) so a cached fault can be retried."""
    return TargetOutcome("error", findings=(Finding.from_json(_finding(fault, fallback, root)),),
                         output=fault.output or None, fault=fault.kind)
