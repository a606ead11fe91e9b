"""Messages and codes for untraceable code: which construct asked for a bool, which exception
means what, and how to quote the offending expression.

>>> from fxscope.trace.frames import SourceLocation
>>> classify_exception(RuntimeError("'len' is not supported in symbolic tracing"), False,
...                    SourceLocation("<none>", 1))[0]
'FXS103'
"""

from __future__ import annotations

import dis
import re
import linecache
import os
import sys
import types
from collections.abc import Callable

import torch
from torch.fx.proxy import TraceError

from fxscope.trace.frames import SourceLocation

__all__ = ["EXTERNAL_CAUSES", "snippet", "subject", "quoted", "is_numpy", "bool_construct", "classify_exception"]

#: Explainers of exceptions caused outside the model (the worker's OS sandbox refusing a write):
#: each returns ``(code, message, hint)`` or None. The process that runs the trace registers them.
EXTERNAL_CAUSES: list[Callable[[BaseException], "tuple[str, str, str | None] | None"]] = []

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


def _index_of(instructions: list[dis.Instruction], offset: int) -> int:
    for i, ins in enumerate(instructions):
        if ins.offset == offset:
            return i
    return len(instructions)


def _leads_to_assert(instructions: list[dis.Instruction], i: int) -> bool:
    """Whether the instruction at ``i`` is (after stack clean-up and forward jumps, as in a
    chained comparison ``assert 0 < x < 9``) the raise of an ``assert``."""
    for _ in range(4):
        if i >= len(instructions):
            return False
        ins = instructions[i]
        if ins.opname == "LOAD_ASSERTION_ERROR":
            return True
        if ins.opname in ("POP_TOP", "NOP"):
            i += 1
        elif ins.opname == "JUMP_FORWARD":
            i = _index_of(instructions, ins.argval)
        else:
            return False
    return False


def bool_construct(frame: types.FrameType) -> str:
    """Which Python construct asked for the bool at ``frame``'s current instruction."""
    try:
        instructions = list(dis.get_instructions(frame.f_code))
    except Exception:  # noqa: BLE001  # pragma: no cover - defensive
        return "Python control flow"
    for i, ins in enumerate(instructions):
        if ins.offset == frame.f_lasti:
            if ins.opname in _JUMP_CONSTRUCTS:
                return _JUMP_CONSTRUCTS[ins.opname]
            if "JUMP" in ins.opname:
                if _leads_to_assert(instructions, i + 1) or (
                        isinstance(ins.argval, int) and _leads_to_assert(instructions, _index_of(instructions, ins.argval))):
                    return "an `assert`"
                return "an `if`/`while` condition"
            if ins.opname in ("CALL", "PRECALL", "CALL_FUNCTION"):
                return "`bool()`"
            break
    return "Python control flow"


def classify_exception(e: BaseException, numpy_involved: bool, loc: SourceLocation,
                       frame: types.FrameType | None = None) -> tuple[str, str, str | None]:
    """Map an exception raised while tracing to a finding code, message and (when the code's
    help text does not fit) a hint. ``frame`` is the frame executing at ``loc``, if known."""
    for explain in EXTERNAL_CAUSES:
        explained = explain(e)
        if explained is not None:
            return explained
    text = str(e)
    name = type(e).__name__
    if numpy_involved or "__array" in text:
        return "FXS106", f"a traced value reaches numpy, which needs real data ({name}: {text})", None
    if isinstance(e, TraceError) and "iterated" in text:
        return ("FXS102", f"a traced value is iterated in {quoted(loc, 'this expression')}; its length is "
                "unknown while tracing", None)
    if isinstance(e, TraceError) and "control flow" in text:
        return "FXS101", f"{subject(loc)} decides Python control flow", None
    if "'len' is not supported" in text:
        return "FXS103", f"`len()` of traced value {quoted(loc)}", None
    if isinstance(e, TypeError) and "slice indices must be" in text:
        return _untraced_slice(loc, frame)
    if isinstance(e, TypeError) and "Proxy" in text:
        if "item assignment" in text:
            return "FXS105", f"item assignment into traced value {quoted(loc)}", None
        if any(s in text for s in ("interpreted as an integer", "indices must be", "int() argument")):
            return ("FXS104", f"a traced value is used as a Python integer in {quoted(loc, 'this expression')}; "
                    "its value is unknown while tracing", _RANGE_HINT if _calls_range(loc) else None)
        if any(s in text for s in ("float() argument", "must be real number")):
            return ("FXS104", f"a traced value is used as a Python float in {quoted(loc, 'this expression')}; "
                    "its value is unknown while tracing", None)
    sizes = _VARARG_SIZES.match(text) if isinstance(e, TypeError) else None
    if sizes is not None and callable(getattr(torch, sizes.group(1), None)):
        return ("FXS104", f"traced sizes are passed one by one in {quoted(loc, 'this call')}, which needs "
                f"Python ints there ({name}: {text})",
                "Pass the sizes as one tuple, e.g. `torch.ones((b, n))` instead of `torch.ones(b, n)`: "
                "torch.fx records a factory call whose size tuple holds traced values.")
    if isinstance(e, RecursionError):
        return "FXS107", "RecursionError: maximum recursion depth exceeded while tracing", None
    return "FXS107", f"{name}: {text}" if text else name, None


#: FXS104 on ``range(n)`` with a traced ``n``: `torch.arange(n)` fails in a `for` loop too.
_RANGE_HINT = (
    "`range()` needs a Python int, and its argument is a traced value here; `torch.arange(n)` does not help "
    "a `for` loop (iterating a traced value fails as well). What works: when it is a size (`n = x.shape[1]`), "
    "give the target example inputs (`inputs = { x = [2, 16] }` under [tool.fxscope.targets.NAME]): "
    "shape-aware tracing unrolls the loop for the example's size (the graph is then valid only for that "
    "size); or move the loop into a function marked with `torch.fx.wrap`, which records each call of it "
    "as one node.")


def _calls_range(loc: SourceLocation) -> bool:
    """Whether the expression at ``loc`` is a call of ``range``."""
    text = snippet(loc, limit=200)
    return text is not None and re.match(r"range\s*\(", text) is not None


#: torch factories given traced sizes as separate arguments: `torch.ones(b, n)`, `torch.randn(b, n)`.
_VARARG_SIZES = re.compile(r"^(\w+)\(\) (takes \d+ positional arguments? but \d+ were given|received an invalid "
                           r"combination of arguments - got \((Proxy|[^)]*, Proxy))")


def _untraced_slice(loc: SourceLocation, frame: types.FrameType | None) -> tuple[str, str, str | None]:
    """FXS104 for slicing a tensor torch.fx does not trace (a buffer, a constant) with traced
    bounds: ``self.bias[:, :, :T, :T]``."""
    text = snippet(loc, limit=200) or ""
    head = text.split("[", 1)[0].strip()
    what = "a tensor that is not traced"
    owner = frame.f_locals.get("self") if frame is not None and head.startswith("self.") else None
    attr = head[len("self."):]
    buffers = getattr(owner, "_buffers", None)
    if isinstance(buffers, dict) and attr in buffers:
        what = f"buffer `{head}`, which torch.fx does not trace (it proxies parameters, not buffers)"
    elif head and "(" not in head:
        what = f"`{head}`, which is not a traced value"
    return ("FXS104",
            f"{quoted(loc, 'this slice')} slices {what}, with traced bounds; slicing it needs Python ints",
            "Slice with `.narrow(dim, start, length)`, which torch.fx records with traced lengths (e.g. "
            "`self.bias.narrow(2, 0, T).narrow(3, 0, T)` for `self.bias[:, :, :T, :T]`), or make the "
            "bounds concrete.")
