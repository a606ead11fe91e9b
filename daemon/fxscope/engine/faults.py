"""Turn a worker fault (timeout, crash, exit, cancelled) into a target result with a finding.

>>> r = fault_result({"fault": "crash", "signal": 11, "signal_name": "SIGSEGV", "stack": []},
...                  {"file": "/ws/m.py", "line": 3}, "/ws")
>>> r["status"], r["findings"][0]["code"]
('error', 'FXS404')
"""

from __future__ import annotations

import os
from typing import Any

from fxscope.model.codes import finding_dict

__all__ = ["fault_result", "is_cacheable_fault", "is_fault_body"]


def _innermost_user_frame(frames: list[dict[str, Any]], root: str) -> dict[str, Any] | None:
    prefix = os.path.abspath(root).rstrip(os.sep) + os.sep
    for frame in reversed(frames or []):
        name = str(frame.get("file", ""))
        if name.startswith("<") and name.endswith(">"):
            continue  # <frozen importlib._bootstrap>, <string>: no file, never a location
        f = os.path.abspath(name)
        if f.startswith(prefix) and f"{os.sep}site-packages{os.sep}" not in f and frame.get("line"):
            return {"file": f, "line": int(frame["line"])}
    return None


def fault_result(fault: dict[str, Any], fallback: dict[str, Any], root: str) -> dict[str, Any]:
    """A target result body (status ``error``) for a worker fault dict; its ``fault`` key names the
    kind (``timeout``, ``crash``, ``exit``, ``exception``) so a cached fault can be retried."""
    kind = fault.get("fault")
    output = fault.get("output") or ""
    if kind == "timeout":
        frames = fault.get("stack") or []
        loc = _innermost_user_frame(frames, root) or fallback
        where = f" (stuck at line {loc['line']})" if loc is not fallback else ""
        finding = finding_dict("FXS403", f"tracing did not finish within {fault.get('timeout')} s{where}", **loc)
    elif kind == "exit":
        loc = _innermost_user_frame(fault.get("traceback") or [], root) or fallback
        code = fault["message"] if isinstance(fault.get("message"), str) else fault.get("exit_code")
        finding = finding_dict("FXS404", f"model code called sys.exit({code!r}); the tracing "
                           "process ended", **loc)
    elif kind == "crash":
        loc = _innermost_user_frame(fault.get("stack") or [], root) or fallback
        if fault.get("signal_name"):
            why = f"the tracing process was killed by {fault['signal_name']}"
            if fault.get("signal") == 9:
                why += " (out of memory, or killed from outside)"
        elif fault.get("exit_code") == 0 and fault.get("message"):  # ended, but its result was unusable
            why = f"the trace gave no usable result: {fault['message']}"
        elif fault.get("exit_code") is not None:
            why = f"the tracing process exited with status {fault['exit_code']} (os._exit or a native abort)"
        else:  # the worker itself died or could not start: nothing is known about the model
            why = f"the trace could not run: {fault.get('message') or 'the worker died'}"
        finding = finding_dict("FXS404", why, **loc)
    elif kind == "exception":
        loc = _innermost_user_frame(fault.get("traceback") or [], root) or fallback
        msg = fault.get("message", "")
        if fault.get("type") in ("MemoryError",):
            text = "the tracing process ran out of memory (memory-limit-mb)"
        else:
            text = f"the tracing process failed: {fault.get('type')}: {msg}"
        finding = finding_dict("FXS404", text, **loc)
    else:
        finding = finding_dict("FXS404", f"the tracing process failed ({kind})", **fallback)
    body: dict[str, Any] = {"status": "error", "modules": [], "nodes": 0, "findings": [finding], "files": {},
                            "fault": str(kind)}
    if output:
        body["output"] = output
    return body


def is_cacheable_fault(fault: dict[str, Any]) -> bool:
    """Every outcome of the target's own process is cached like a result: timeouts (whether the
    child was busy or waiting), crashes, exits and uncaught exceptions, so an unchanged workspace
    never pays a timeout twice; an edit of a recorded dependency or ``retry_faults`` runs it again.
    Not cached: cancellations (they depend on the caller) and the worker itself dying or failing
    to start (neither a signal nor an exit status of the job's process is known: nothing was
    learnt about the model)."""
    kind = fault.get("fault")
    if kind in ("exit", "exception", "timeout"):
        return True
    if kind == "crash":
        return fault.get("exit_code") is not None or fault.get("signal") is not None
    return False


def is_fault_body(body: dict[str, Any]) -> bool:
    """Whether a (cached) result body came from a fault, i.e. what ``retry_faults`` re-runs."""
    return bool(body.get("fault"))
