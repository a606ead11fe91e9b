"""User stacks as torch.compile and torch.export report them, placed like every fxscope finding.

A stack (outermost first) becomes a location, an anchor and a call chain: the location is the
innermost frame of model code (the workspace or an installed library such as transformers, never
torch, the standard library or fxscope), the anchor the innermost workspace frame when the location
lies in a library, and the call chain the model frames before it.

>>> from fxscope.trace.frames import FrameClassifier
>>> classifier = FrameClassifier(is_user_file=lambda f: f.startswith("/w/"))
>>> placed = place([StackFrame("/w/m.py", 9, "forward"), StackFrame("/site/lib.py", 3, "helper")], classifier)
>>> placed.location.file, placed.anchor.line, [r.line for r in placed.related]
('/site/lib.py', 9, [9])
"""

from __future__ import annotations

import os
import traceback
import types
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from fxscope.trace.frames import INTERNAL, USER, FrameClassifier, SourceLocation, char_column

__all__ = ["Placed", "StackFrame", "frames_from_summaries", "frames_from_traceback", "place"]


@dataclass(frozen=True)
class StackFrame:
    """One frame of a user stack: absolute ``file``, 1-based ``line``, the function ``name`` and,
    when known, the 1-based code-point ``column`` range (``end_column`` exclusive)."""

    file: str
    line: int
    name: str = ""
    column: int | None = None
    end_column: int | None = None

    def location(self) -> SourceLocation:
        """This frame as a source location."""
        end_line = self.line if self.end_column is not None else None
        return SourceLocation(self.file, self.line, self.column, end_line, self.end_column, self.name or None)


@dataclass(frozen=True)
class Placed:
    """Where a stack's finding goes: its ``location``, ``anchor`` (or None) and call chain."""

    location: SourceLocation
    anchor: SourceLocation | None = None
    related: list[SourceLocation] = field(default_factory=list)


def place(frames: Sequence[StackFrame], classifier: FrameClassifier) -> Placed | None:
    """The location, anchor and call chain of ``frames`` (outermost first); None when no frame is
    model code."""
    model = [f for f in frames if classifier.file_kind(f.file) != INTERNAL]
    if not model:
        return None
    innermost = model[-1]
    anchor = None
    if classifier.file_kind(innermost.file) != USER:
        user = [f for f in model if classifier.file_kind(f.file) == USER]
        anchor = user[-1].location() if user else None
    return Placed(innermost.location(), anchor, [f.location() for f in model[:-1]])


def frames_from_summaries(summaries: Sequence[Any]) -> tuple[StackFrame, ...]:
    """Frames from ``traceback.FrameSummary`` objects (a compiled graph's ``user_stack``, a
    traceback); their columns are UTF-8 byte offsets, converted here to code points."""
    out = []
    for s in summaries:
        file, line = os.path.abspath(str(s.filename)), int(s.lineno or 0)
        if line < 1 or str(s.filename).startswith("<"):
            continue
        colno, end_colno = getattr(s, "colno", None), getattr(s, "end_colno", None)
        same_line = getattr(s, "end_lineno", line) in (None, line)
        column = char_column(file, line, colno) + 1 if colno is not None else None
        end_column = char_column(file, line, end_colno) + 1 if end_colno is not None and same_line else None
        out.append(StackFrame(file, line, str(s.name), column, end_column if column is not None else None))
    return tuple(out)


def frames_from_traceback(tb: types.TracebackType | None) -> tuple[StackFrame, ...]:
    """The frames of a traceback, outermost first, with exact columns."""
    return frames_from_summaries(traceback.extract_tb(tb))
