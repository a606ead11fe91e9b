"""The one place that converts between the store's positions and LSP positions.

The result store (and the report contract) uses 1-based lines and 1-based *code-point* columns.
LSP positions are 0-based lines and 0-based characters counted in the negotiated position
encoding: UTF-16 code units (the default), UTF-8 bytes or UTF-32 code points. A tab is one code
point like any other character (no tab expansion on either side).

>>> enc = PositionEncoder("utf-16")
>>> line = "s = '😀' + x  # é"
>>> enc.to_character(line, 11)          # 1-based code point 11 is `x`
11
>>> PositionEncoder("utf-8").to_character(line, 11)
13
>>> enc.from_character(line, 11)
11
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from lsprotocol import types

from fxscope.session.linemap import LineEdit

__all__ = ["PositionEncoder", "SUPPORTED_ENCODINGS", "content_edits", "negotiate", "split_lines"]

#: Encodings the server can negotiate, in the order it prefers them when the client offers several.
SUPPORTED_ENCODINGS = ("utf-16", "utf-8", "utf-32")


def split_lines(text: str) -> list[str]:
    """Lines of ``text`` without their terminators, the way LSP counts them (``\\n``, ``\\r\\n``,
    ``\\r``). A text ending with a newline has an empty last line.

    >>> split_lines("a\\r\\nb\\rc\\n")
    ['a', 'b', 'c', '']
    """
    out: list[str] = []
    start = 0
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "\n" or ch == "\r":
            out.append(text[start:i])
            if ch == "\r" and i + 1 < n and text[i + 1] == "\n":
                i += 1
            start = i + 1
        i += 1
    out.append(text[start:])
    return out


def _units(ch: str, encoding: str) -> int:
    cp = ord(ch)
    if encoding == "utf-16":
        return 2 if cp > 0xFFFF else 1
    if encoding == "utf-8":
        return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4
    return 1


@dataclass(frozen=True)
class PositionEncoder:
    """Converts columns for one negotiated ``encoding`` (``utf-16``, ``utf-8`` or ``utf-32``)."""

    encoding: str = "utf-16"

    def __post_init__(self) -> None:
        if self.encoding not in SUPPORTED_ENCODINGS:
            raise ValueError(f"unsupported position encoding {self.encoding!r}")

    def to_character(self, line_text: str, column: int | None) -> int:
        """0-based LSP character of the 1-based code-point ``column`` on ``line_text``; a column
        past the end of the line is clamped to its end, a missing one is the line start."""
        if column is None or column <= 1:
            return 0
        prefix = line_text[: column - 1]
        if self.encoding == "utf-32":
            return len(prefix)
        if prefix.isascii():
            return len(prefix)
        if self.encoding == "utf-8":
            return len(prefix.encode("utf-8"))
        return len(prefix.encode("utf-16-le")) // 2

    def from_character(self, line_text: str, character: int) -> int:
        """1-based code-point column of the 0-based LSP ``character`` on ``line_text``. A character
        inside a multi-unit code point (half a surrogate pair) maps to that code point; one past
        the end of the line is clamped to just after its last character."""
        if character <= 0:
            return 1
        if self.encoding == "utf-32" or line_text.isascii():
            return min(character, len(line_text)) + 1
        units = 0
        for i, ch in enumerate(line_text):
            units += _units(ch, self.encoding)
            if units > character:
                return i + 1
            if units == character:
                return i + 2
        return len(line_text) + 1

    def position(self, lines: Sequence[str], line: int, column: int | None) -> types.Position:
        """LSP position of 1-based ``line`` and code-point ``column`` in ``lines`` (clamped to the
        text, so a stale location never points outside the document)."""
        if not lines:
            return types.Position(line=0, character=0)
        index = min(max(line, 1), len(lines)) - 1
        if line > len(lines):
            return types.Position(line=index, character=self.line_length(lines[index]))
        return types.Position(line=index, character=self.to_character(lines[index], column))

    def line_length(self, line_text: str) -> int:
        """Length of ``line_text`` in this encoding's units."""
        return self.to_character(line_text, len(line_text) + 1)

    def range(self, lines: Sequence[str], line: int, column: int | None = None,
              end_line: int | None = None, end_column: int | None = None) -> types.Range:
        """LSP range of a store location. Without a column the range covers the line's text from
        its first non-blank character; without an end column it runs to the end of ``end_line``
        (or of ``line``); an empty or inverted range is widened to the rest of the line."""
        if not lines:
            zero = types.Position(line=0, character=0)
            return types.Range(start=zero, end=zero)
        last = len(lines)
        line = min(max(line, 1), last)
        text = lines[line - 1]
        if column is None:
            column = len(text) - len(text.lstrip()) + 1
            end_line, end_column = line, None
        start = self.position(lines, line, column)
        end_line = line if end_line is None or end_line < line else min(end_line, last)
        end_text = lines[end_line - 1]
        if end_column is None:
            end = types.Position(line=end_line - 1, character=self.line_length(end_text))
        else:
            end = self.position(lines, end_line, end_column)
        if (end.line, end.character) <= (start.line, start.character):
            end = types.Position(line=start.line, character=self.line_length(text))
        return types.Range(start=start, end=end)

    def to_store(self, lines: Sequence[str], position: types.Position) -> tuple[int, int]:
        """1-based line and code-point column of an LSP ``position`` in ``lines``."""
        line = position.line + 1
        if not lines or position.line >= len(lines):
            return line, 1
        return line, self.from_character(lines[position.line], position.character)


def negotiate(client_encodings: Sequence[str] | None) -> str:
    """The position encoding to use: the client's first offered one that the server supports,
    else UTF-16 (the protocol's mandatory default).

    >>> negotiate(["utf-8", "utf-16"]), negotiate(None), negotiate(["utf-7"])
    ('utf-8', 'utf-16', 'utf-16')
    """
    for enc in client_encodings or ():
        if enc in SUPPORTED_ENCODINGS:
            return str(enc)
    return "utf-16"


_BREAK = re.compile(r"\r\n|\r|\n")


def _break_count(text: str) -> int:
    return len(_BREAK.findall(text))


class _Lines:
    """The lines of a text read only as far as asked (a change near the top of a long file
    costs what lies above it)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts = [0]
        self._breaks = _BREAK.finditer(text)
        self._done = False

    def _reach(self, index: int) -> bool:
        while len(self._starts) <= index and not self._done:
            found = next(self._breaks, None)
            if found is None:
                self._done = True
            else:
                self._starts.append(found.end())
        return index < len(self._starts)

    def count(self) -> int:
        self._reach(1 << 62)
        return len(self._starts)

    def start(self, index: int) -> int:
        """Offset of 0-based line ``index`` (which must exist)."""
        self._reach(index)
        return self._starts[index]

    def line(self, index: int) -> str | None:
        """0-based line ``index`` without its terminator (None past the end)."""
        if not self._reach(index):
            return None
        start = self._starts[index]
        end = self._starts[index + 1] if self._reach(index + 1) else len(self.text)
        return self.text[start:end].rstrip("\r\n") if end > start else ""


def _line_edit(lines: _Lines, start: tuple[int, int], end: tuple[int, int], text: str) -> LineEdit | None:
    """The lines one change replaces (1-based lines, code-point columns); None when it changes
    nothing. Text inserted before a line's first character or after its last one leaves that
    line itself unchanged, only moved."""
    (line, column), (end_line, end_column) = start, end
    if (line, column) == (end_line, end_column) and not text:
        return None
    count = _break_count(text)
    at_start = column == 1 and end_column == 1
    if at_start and (not text or text.endswith(("\n", "\r"))):
        return LineEdit(line, end_line, count)
    at_end = (column == len(lines.line(line - 1) or "") + 1 and end_column == len(lines.line(end_line - 1) or "") + 1)
    if at_end and (not text or text.startswith(("\n", "\r"))):
        return LineEdit(line + 1, end_line + 1, count)
    return LineEdit(line, end_line + 1, count + 1)


def content_edits(before: str, changes: Sequence[object], encoder: PositionEncoder) -> tuple[str, list[LineEdit]] | None:
    """A ``didChange``'s content changes applied to ``before``: the text after them and the line
    edits they made, each in the text before it; None when a change replaces the whole document
    (its lines are found by a line diff instead).

    >>> change = types.TextDocumentContentChangePartial(
    ...     range=types.Range(start=types.Position(line=1, character=0), end=types.Position(line=1, character=0)),
    ...     text="a\\nb\\n")
    >>> content_edits("x\\ny\\n", [change], PositionEncoder())
    ('x\\na\\nb\\ny\\n', [LineEdit(start=2, end=2, count=2)])
    """
    text = before
    edits: list[LineEdit] = []
    for change in changes:
        rng = getattr(change, "range", None)
        if not isinstance(change, types.TextDocumentContentChangePartial) or rng is None:
            return None
        lines = _Lines(text)

        def place(pos: types.Position) -> tuple[int, int, int]:
            content = lines.line(pos.line)
            if content is None:  # past the end: the end of the text
                last = lines.count() - 1
                return last + 1, len(lines.line(last) or "") + 1, len(text)
            column = encoder.from_character(content, pos.character)
            return pos.line + 1, column, lines.start(pos.line) + column - 1

        (line, column, start), (end_line, end_column, end) = place(rng.start), place(rng.end)
        if (end_line, end_column) < (line, column):
            return None
        edit = _line_edit(lines, (line, column), (end_line, end_column), change.text)
        if edit is not None:
            edits.append(edit)
        text = text[:start] + change.text + text[end:]
    return text, edits
