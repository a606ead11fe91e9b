"""Store positions (1-based code-point columns) <-> LSP positions in every encoding."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from lsprotocol import types

from fxscope.lsp.positions import PositionEncoder, negotiate, split_lines

LINE = "\tq = '😀é' + x.sum()  # ñ"  # a tab, an astral code point (2 UTF-16 units, 4 bytes), 2-byte é


def test_columns_in_each_encoding():
    col_x = LINE.index("x") + 1  # 1-based code point
    assert PositionEncoder("utf-32").to_character(LINE, col_x) == col_x - 1
    assert PositionEncoder("utf-16").to_character(LINE, col_x) == col_x - 1 + 1  # surrogate pair
    assert PositionEncoder("utf-8").to_character(LINE, col_x) == col_x - 1 + 3 + 1  # 4-byte + 2-byte
    assert PositionEncoder("utf-16").to_character(LINE, 1) == 0
    assert PositionEncoder("utf-16").to_character(LINE, 2) == 1  # the tab is one unit


def test_round_trip_every_code_point():
    for enc in ("utf-8", "utf-16", "utf-32"):
        e = PositionEncoder(enc)
        for col in range(1, len(LINE) + 2):
            assert e.from_character(LINE, e.to_character(LINE, col)) == col, (enc, col)


def test_character_inside_surrogate_pair_maps_to_that_code_point():
    e = PositionEncoder("utf-16")
    emoji_col = LINE.index("😀") + 1
    start = e.to_character(LINE, emoji_col)
    assert e.from_character(LINE, start + 1) == emoji_col


def test_range_clamps_and_defaults():
    lines = split_lines("a = 1\n    if x:\n")
    e = PositionEncoder("utf-16")
    r = e.range(lines, 2)  # no column: from the first non-blank to the line end
    assert (r.start.line, r.start.character, r.end.line, r.end.character) == (1, 4, 1, 9)
    r = e.range(lines, 40, 3, 40, 9)  # stale location past the end stays inside the text
    assert r.start.line <= len(lines) - 1 and r.end.line <= len(lines) - 1
    r = e.range(lines, 2, 8, 2, 8)  # empty range widened to the rest of the line
    assert (r.start.character, r.end.character) == (7, 9)
    r = e.range(lines, 1, 1, 2, 7)
    assert (r.start.line, r.start.character, r.end.line, r.end.character) == (0, 0, 1, 6)


def test_to_store():
    lines = split_lines(LINE)
    e = PositionEncoder("utf-16")
    col = LINE.index("x") + 1
    assert e.to_store(lines, types.Position(line=0, character=e.to_character(LINE, col))) == (1, col)
    assert e.to_store(lines, types.Position(line=5, character=3)) == (6, 1)


def test_split_lines_and_negotiate():
    assert split_lines("") == [""]
    assert split_lines("a\r\n\r\nb") == ["a", "", "b"]
    assert negotiate(["utf-32"]) == "utf-32"
    with pytest.raises(ValueError):
        PositionEncoder("latin-1")


@settings(deadline=None)  # no timing intent: a stalled example on a loaded host is not a failure
@given(st.text(), st.sampled_from(["utf-8", "utf-16", "utf-32"]))
def test_matches_the_encoded_length(text, enc):
    line = text.replace("\n", " ").replace("\r", " ")
    e = PositionEncoder(enc)
    codec = {"utf-8": "utf-8", "utf-16": "utf-16-le", "utf-32": "utf-32-le"}[enc]
    width = {"utf-8": 1, "utf-16": 2, "utf-32": 4}[enc]
    for col in range(1, len(line) + 2):
        assert e.to_character(line, col) == len(line[: col - 1].encode(codec, "surrogatepass")) // width
        assert e.from_character(line, e.to_character(line, col)) == col
