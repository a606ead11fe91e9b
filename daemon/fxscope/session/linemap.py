"""Where the lines of one version of a text are in a later one.

Results are computed for one version of a document and shown in a later one: until new results
arrive, every position is mapped through the edits made since. A :class:`LineMap` holds the
lines that survived unchanged (content and all), as blocks; a line an edit touched, or one it
inserted, has no counterpart (``None``), so its results are withheld rather than shown on a line
that did not produce them. Columns of a mapped line stay valid: its text did not change.

Edits come as :class:`LineEdit` values (an editor's incremental changes, converted by the
front end) or, for a whole new text, from a line diff (:func:`diff_lines`).

>>> m = LineMap.IDENTITY.then([LineEdit(3, 3, 2)])   # two lines inserted above line 3
>>> m.line(2), m.line(3), m.back(3), m.back(5)
(2, 5, None, 3)
>>> m = diff_lines("a\\nb\\nc\\n", "a\\nB\\nc\\n")       # line 2 edited
>>> m.line(1), m.line(2), m.line(3)
(1, None, 3)
"""

from __future__ import annotations

import bisect
import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["LineEdit", "LineMap", "diff_edits", "diff_lines", "split_text"]

_BREAK = re.compile(r"\r\n|\r|\n")
#: A block that runs to the end of any text.
_ENDLESS = 1 << 62
#: Largest middle part (old lines x new lines) a line diff aligns; beyond it the middle is unknown.
MAX_DIFF_CELLS = 4_000_000


def split_text(text: str) -> list[str]:
    """The lines of ``text`` as Python and LSP count them (``\\n``, ``\\r\\n``, ``\\r``).

    >>> split_text("a\\r\\nb\\n")
    ['a', 'b', '']
    """
    return _BREAK.split(text)


@dataclass(frozen=True)
class LineEdit:
    """Lines ``start`` up to ``end`` (1-based, end exclusive, of the text before the edit)
    replaced by ``count`` new lines: ``LineEdit(4, 4, 2)`` inserts two lines above line 4,
    ``LineEdit(4, 5, 1)`` changes line 4, ``LineEdit(4, 6, 0)`` deletes lines 4 and 5."""

    start: int
    end: int
    count: int


@dataclass(frozen=True)
class LineMap:
    """Unchanged lines between two versions: blocks of ``(old, new, length)`` (1-based first
    lines), in order in both versions."""

    blocks: tuple[tuple[int, int, int], ...]

    #: Every line where it was.
    IDENTITY: ClassVar[LineMap]

    def line(self, old: int) -> int | None:
        """Where line ``old`` is now (None: edited or deleted since)."""
        i = bisect.bisect_right(self.blocks, (old, _ENDLESS, _ENDLESS)) - 1
        if i < 0:
            return None
        start, new, length = self.blocks[i]
        return new + old - start if old < start + length else None

    def back(self, new: int) -> int | None:
        """Which old line line ``new`` is (None: inserted or edited since)."""
        starts = [b[1] for b in self.blocks]
        i = bisect.bisect_right(starts, new) - 1
        if i < 0:
            return None
        old, start, length = self.blocks[i]
        return old + new - start if new < start + length else None

    @property
    def is_identity(self) -> bool:
        """Whether every line is where it was."""
        return self.blocks == ((1, 1, _ENDLESS),)

    def covering(self, old_count: int, new_count: int) -> LineEdit:
        """One edit that turns the old text (``old_count`` lines) into the new one (``new_count``):
        it replaces everything between the unchanged head and the unchanged tail.

        >>> LineMap.IDENTITY.then([LineEdit(3, 4, 2), LineEdit(8, 8, 1)]).covering(10, 12)
        LineEdit(start=3, end=7, count=6)
        """
        head = tail = 0
        if self.blocks and self.blocks[0][:2] == (1, 1):
            head = min(self.blocks[0][2], old_count, new_count)
        if self.blocks:
            old, new, length = self.blocks[-1]
            last = min(old + length - 1, old_count)
            if last == old_count and new + last - old == new_count:
                tail = last - old + 1
        tail = max(0, min(tail, old_count - head, new_count - head))
        return LineEdit(head + 1, old_count - tail + 1, new_count - tail - head)

    def then(self, edits: Iterable[LineEdit]) -> LineMap:
        """This map followed by ``edits`` (each in the coordinates of the text before it)."""
        blocks = list(self.blocks)
        for edit in edits:
            delta = edit.count - (edit.end - edit.start)
            out: list[tuple[int, int, int]] = []
            for old, new, length in blocks:
                stop = new + length
                if stop <= edit.start:  # wholly above the edit
                    out.append((old, new, length))
                    continue
                if new < edit.start:  # the part above the edit
                    out.append((old, new, edit.start - new))
                if stop > edit.end:  # the part below it, moved
                    first = max(new, edit.end)
                    out.append((old + first - new, first + delta, stop - first))
            blocks = [b for b in out if b[2] > 0]
        return LineMap(tuple(blocks))


LineMap.IDENTITY = LineMap(((1, 1, _ENDLESS),))


def diff_edits(old: str | Sequence[str], new: str | Sequence[str]) -> tuple[LineEdit, ...]:
    """The edits that turn ``old`` into ``new``, by a line diff (for clients that send whole
    texts): the common head and tail stay, :mod:`difflib` matches the lines in between, and
    what it cannot match is replaced. Bottom-up, so each edit's lines are those of ``old``.

    >>> diff_edits(["x", "y", "z"], ["w", "x", "y", "q", "z"])
    (LineEdit(start=3, end=3, count=1), LineEdit(start=1, end=1, count=1))
    """
    a = split_text(old) if isinstance(old, str) else list(old)
    b = split_text(new) if isinstance(new, str) else list(new)
    if a == b:
        return ()
    head = 0
    while head < len(a) and head < len(b) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < len(a) - head and tail < len(b) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    matched: list[tuple[int, int, int]] = [(1, 1, head)] if head else []
    mid_a, mid_b = a[head:len(a) - tail], b[head:len(b) - tail]
    if mid_a and mid_b and len(mid_a) * len(mid_b) <= MAX_DIFF_CELLS:
        matcher = difflib.SequenceMatcher(None, mid_a, mid_b, autojunk=False)
        matched += [(head + i + 1, head + j + 1, n) for i, j, n in matcher.get_matching_blocks() if n]
    if tail:
        matched.append((len(a) - tail + 1, len(b) - tail + 1, tail))
    matched.append((len(a) + 1, len(b) + 1, 0))
    edits = []
    at_old = at_new = 1
    for i, j, n in matched:
        if i > at_old or j > at_new:
            edits.append(LineEdit(at_old, i, j - at_new))
        at_old, at_new = i + n, j + n
    return tuple(reversed(edits))


def diff_lines(old: str | Sequence[str], new: str | Sequence[str]) -> LineMap:
    """The map from ``old`` to ``new`` by the line diff of :func:`diff_edits`.

    >>> m = diff_lines(["x", "y", "z"], ["w", "x", "y", "q", "z"])
    >>> [m.line(i) for i in (1, 2, 3)], m.back(1), m.back(4)
    ([2, 3, 5], None, None)
    """
    return LineMap.IDENTITY.then(diff_edits(old, new))
