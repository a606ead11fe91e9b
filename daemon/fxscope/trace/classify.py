"""Messages and codes for untraceable code: which construct asked for a bool, which exception
means what, and how to quote the offending expression.

>>> from fxscope.trace.frames import SourceLocation
>>> classify_exception(RuntimeError("'len' is not supported in symbolic tracing"), False,
...                    SourceLocation("<none>", 1))[0]
'FXS103'
"""

from __future__ import annotations

import dis
import linecache
import os
import sys
import types

from torch.fx.proxy import TraceError

from fxscope.trace.frames import SourceLocation

__all__ = ["snippet", "subject", "quoted", "is_numpy", "bool_construct", "classify_exception"]

_JUMP_CONSTRUCTS = {
    "UNARY_NOT": "`not`",
    "JUMP_IF_TRUE_OR_POP": "`or`",
    "JUMP_IF_FALSE_OR_POP": "`and`",
}




def snippet(loc: SourceLocation, limit: int = 60) -> str | None:
    """The source text of a single-line location, if short enough to quote."""
    if loc.column is None or loc.end_column is None or loc.end_line not in (None, loc.line):
        return None
    text = linecache.getline(loc.file, loc.line)[loc.column - 1 : loc.end_column - 1].strip()
    return text if text and len(text) <= limit else None


def subject(loc: SourceLocation) -> str:
    """``traced value `expr``` when the expression is quotable, else ``a traced value``."""
    text = snippet(loc)
    return f"traced value `{text}`" if text else "a traced value"


def quoted(loc: SourceLocation, fallback: str = "a traced value") -> str:
    text = snippet(loc)
    return f"`{text}`" if text else fallback


def is_numpy(filename: str) -> bool:
    np = sys.modules.get("numpy")
    base = getattr(np, "__file__", None)
    if not base:
        return False
    return filename.startswith(os.path.dirname(base))


def bool_construct(frame: types.FrameType) -> str:
    """Which Python construct asked for the bool at ``frame``'s current instruction."""
    try:
        instructions = list(dis.get_instructions(frame.f_code))
    except Exception:  # pragma: no cover - defensive
        return "Python control flow"
    for i, ins in enumerate(instructions):
        if ins.offset == frame.f_lasti:
            if ins.opname in _JUMP_CONSTRUCTS:
                return _JUMP_CONSTRUCTS[ins.opname]
            if "JUMP" in ins.opname:
                nxt = instructions[i + 1] if i + 1 < len(instructions) else None
                if nxt is not None and nxt.opname == "LOAD_ASSERTION_ERROR":
                    return "an `assert`"
                return "an `if`/`while` condition"
            if ins.opname in ("CALL", "PRECALL", "CALL_FUNCTION"):
                return "`bool()`"
            break
    return "Python control flow"


def classify_exception(e: BaseException, numpy_involved: bool, loc: SourceLocation) -> tuple[str, str]:
    """Map an exception raised while tracing to a finding code and message."""
    text = str(e)
    name = type(e).__name__
    if numpy_involved or "__array" in text:
        return "FXS106", f"a traced value reaches numpy, which needs real data ({name}: {text})"
    if isinstance(e, TraceError) and "iterated" in text:
        return "FXS102", f"a traced value is iterated in {quoted(loc, 'this expression')}; its length is unknown while tracing"
    if isinstance(e, TraceError) and "control flow" in text:
        return "FXS101", f"{subject(loc)} decides Python control flow"
    if "'len' is not supported" in text:
        return "FXS103", f"`len()` of traced value {quoted(loc)}"
    if isinstance(e, TypeError) and "Proxy" in text:
        if "item assignment" in text:
            return "FXS105", f"item assignment into traced value {quoted(loc)}"
        if any(s in text for s in ("interpreted as an integer", "indices must be", "int() argument",
                                   "float() argument", "must be real number")):
            return "FXS104", f"traced value used as a Python number or index in {quoted(loc, 'this expression')}"
    if isinstance(e, RecursionError):
        return "FXS107", "RecursionError: maximum recursion depth exceeded while tracing"
    return "FXS107", f"{name}: {text}" if text else name
