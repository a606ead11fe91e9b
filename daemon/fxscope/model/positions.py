"""One place that converts the store's positions (1-based lines, 1-based code-point columns) to
and from LSP positions (0-based lines, 0-based columns in the negotiated encoding).

>>> line = "x = '\\u00e9\\U0001F600'\\tmask.any()"
>>> col = line.index("mask") + 1          # 1-based code point column
>>> to_lsp_character(line, col, "utf-16"), to_lsp_character(line, col, "utf-8"), to_lsp_character(line, col, "utf-32")
(10, 13, 9)
>>> from_lsp_character(line, 10, "utf-16") == col
True
"""

from __future__ import annotations

__all__ = ["ENCODINGS", "from_lsp_character", "to_lsp_character", "to_lsp_range"]

#: Position encodings an LSP client may negotiate (``utf-16`` is the protocol's default).
ENCODINGS = ("utf-16", "utf-8", "utf-32")


def _units(char: str, encoding: str) -> int:
    point = ord(char)
    if encoding == "utf-32":
        return 1
    if encoding == "utf-16":
        return 2 if point > 0xFFFF else 1
    if encoding == "utf-8":
        return 1 if point < 0x80 else 2 if point < 0x800 else 3 if point < 0x10000 else 4
    raise ValueError(f"unknown position encoding {encoding!r} (expected one of {', '.join(ENCODINGS)})")


def to_lsp_character(line_text: str, column: int | None, encoding: str = "utf-16") -> int:
    """The 0-based LSP character offset of 1-based code-point ``column`` on ``line_text`` (None or
    < 1: 0; past the end: the line's length in ``encoding`` units). A tab is one character."""
    if column is None or column <= 1:
        return 0
    prefix = line_text[: column - 1]
    if encoding == "utf-32":
        return len(prefix)
    return sum(_units(c, encoding) for c in prefix)


def from_lsp_character(line_text: str, character: int, encoding: str = "utf-16") -> int:
    """The 1-based code-point column of 0-based LSP ``character`` on ``line_text`` (an offset in
    the middle of a character counts as that character; past the end: one past the last)."""
    units = 0
    for index, char in enumerate(line_text):
        if units >= character:
            return index + 1
        units += _units(char, encoding)
        if units > character:
            return index + 1
    return len(line_text) + 1


def to_lsp_range(lines: list[str], line: int, column: int | None, end_line: int | None,
                 end_column: int | None, encoding: str = "utf-16") -> tuple[int, int, int, int]:
    """(start line, start char, end line, end char), all 0-based in ``encoding``, of a 1-based
    code-point range; without columns it covers the whole line (from its first non-blank)."""
    start_text = lines[line - 1] if 1 <= line <= len(lines) else ""
    if column is None:
        indent = len(start_text) - len(start_text.lstrip())
        start = to_lsp_character(start_text, indent + 1, encoding)
        return line - 1, start, line - 1, to_lsp_character(start_text, len(start_text) + 1, encoding)
    last = end_line if end_line is not None else line
    end_text = lines[last - 1] if 1 <= last <= len(lines) else ""
    end_col = end_column if end_column is not None else len(end_text) + 1
    return (line - 1, to_lsp_character(start_text, column, encoding),
            last - 1, to_lsp_character(end_text, end_col, encoding))
