"""Line maps: where the lines of one version of a text are in a later one (incremental edits, a
line diff of whole texts), and the document store's mapping between versions."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings, strategies as st
from lsprotocol import types

from fxscope.lsp.positions import PositionEncoder, content_edits
from fxscope.project.notebooks import make_notebook
from fxscope.session.documents import DocumentStore
from fxscope.session.linemap import LineEdit, LineMap, diff_edits, diff_lines, split_text


def _check(old: list[str], new: list[str], lines: LineMap) -> None:
    """Every mapped line has the same text in both versions, and ``back`` inverts ``line``."""
    for i, text in enumerate(old, 1):
        j = lines.line(i)
        if j is not None:
            assert new[j - 1] == text, (i, j)
            assert lines.back(j) == i
    for j in range(1, len(new) + 1):
        i = lines.back(j)
        if i is not None:
            assert lines.line(i) == j


def test_insert_change_delete() -> None:
    m = LineMap.IDENTITY.then([LineEdit(3, 3, 2)])  # two lines inserted above line 3
    assert [m.line(i) for i in (1, 2, 3, 10)] == [1, 2, 5, 12]
    assert [m.back(i) for i in (3, 4, 5)] == [None, None, 3]
    m = m.then([LineEdit(5, 6, 1)])  # the moved line 3 is edited: its results are withheld
    assert m.line(3) is None and m.line(4) == 6
    m = m.then([LineEdit(1, 2, 0)])  # line 1 deleted
    assert m.line(1) is None and m.line(2) == 1 and m.line(4) == 5
    assert LineMap.IDENTITY.is_identity and not m.is_identity


def test_diff_of_whole_texts() -> None:
    old = "import torch\n\nclass A:\n    x = 1\n\nclass B:\n    y = 2\n"
    new = "import torch\n# a\n# b\n\nclass A:\n    x = 10\n\nclass B:\n    y = 2\n"
    m = diff_lines(old, new)
    _check(split_text(old), split_text(new), m)
    assert m.line(3) == 5 and m.line(4) is None and m.line(6) == 8
    assert diff_edits("a\nb", "a\nb") == () and diff_lines("a", "a").is_identity


_LINE = st.sampled_from(["", "x = 1", "    return x", "class A:", "y = f(x)", "# c", "pass"])


@settings(deadline=None, max_examples=300)
@given(st.lists(_LINE, min_size=1, max_size=30), st.lists(_LINE, min_size=1, max_size=30))
def test_any_diff_maps_only_equal_lines(old: list[str], new: list[str]) -> None:
    _check(old, new, diff_lines(old, new))


@st.composite
def _edited(draw: st.DrawFn) -> tuple[str, list[types.TextDocumentContentChangePartial]]:
    """A text and incremental changes to it (each in the text the previous one left)."""
    text = "\n".join(draw(st.lists(_LINE, min_size=1, max_size=12))) + draw(st.sampled_from(["", "\n"]))
    changes = []
    current = text
    for _ in range(draw(st.integers(1, 4))):
        lines = current.split("\n")
        a = draw(st.integers(0, len(lines) - 1))
        b = draw(st.integers(a, len(lines) - 1))
        ca = draw(st.integers(0, len(lines[a])))
        cb = draw(st.integers(0 if b > a else ca, len(lines[b])))
        new = draw(st.sampled_from(["", "\n", "z\n", "\nz", "q", "a\nb\n", "\n\n", "w = 3\n"]))
        changes.append(types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=a, character=ca), end=types.Position(line=b, character=cb)),
            text=new))
        start = sum(len(x) + 1 for x in lines[:a]) + ca
        end = sum(len(x) + 1 for x in lines[:b]) + cb
        current = current[:start] + new + current[end:]
    return text, changes


@settings(deadline=None, max_examples=300)
@given(_edited())
def test_incremental_changes_map_only_unchanged_lines(case: tuple[str, list[types.TextDocumentContentChangePartial]]) -> None:
    text, changes = case
    result = content_edits(text, changes, PositionEncoder("utf-16"))
    assert result is not None
    after, edits = result
    expected = text
    for change in changes:  # the reference: apply each change by offsets
        lines = expected.split("\n")
        r = change.range
        start = sum(len(x) + 1 for x in lines[:r.start.line]) + r.start.character
        end = sum(len(x) + 1 for x in lines[:r.end.line]) + r.end.character
        expected = expected[:start] + change.text + expected[end:]
    assert after == expected
    _check(split_text(text), split_text(after), LineMap.IDENTITY.then(edits))


def test_lines_inserted_before_or_after_a_line_keep_it() -> None:
    enc = PositionEncoder("utf-16")
    at_start = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=1, character=0), end=types.Position(line=1, character=0)),
        text="# one\n# two\n")
    at_end = types.TextDocumentContentChangePartial(  # Enter at the end of line 1, then the new line
        range=types.Range(start=types.Position(line=0, character=5), end=types.Position(line=0, character=5)),
        text="\n    ")
    _, edits = content_edits("x = 1\ny = 2\n", [at_start, at_end], enc) or ("", [])
    m = LineMap.IDENTITY.then(edits)
    assert m.line(1) == 1 and m.line(2) == 5  # neither line is lost
    typed = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=0, character=2), end=types.Position(line=0, character=2)), text="y")
    _, edits = content_edits("x = 1\ny = 2\n", [typed], enc) or ("", [])
    assert LineMap.IDENTITY.then(edits).line(1) is None  # an edited line's results are withheld
    whole = types.TextDocumentContentChangeWholeDocument(text="a\n")
    assert content_edits("x\n", [whole], enc) is None  # a whole text: found by a line diff


def test_document_store_maps_versions_and_holds_broken_buffers(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = 1\nb = 2\n")
    key = str(path)
    docs = DocumentStore()
    docs.open(key, 1, "a = 1\nb = 2\n")
    assert docs.view().line_map(key, None).is_identity and docs.view().line_map(key, 1).is_identity
    changed = docs.change(key, 2, "# c\na = 1\nb = 2\n", [LineEdit(1, 1, 1)])
    assert changed.files == (key,)
    assert docs.view().line_map(key, 1).line(2) == 3
    broken = docs.change(key, 3, "# c\na = (\nb = 2\n")  # a line diff; and it does not parse
    assert broken.files == () and broken.snapshot.text(key) == "# c\na = 1\nb = 2\n"
    assert broken.snapshot.version(key) == 2 and key in docs.view().held and not docs.parses(key)
    view = docs.view()
    assert view.line_map(key, 2).line(2) is None and view.line_map(key, 2).line(3) == 3
    assert view.line_map(key, 1).line(2) == 3 and view.texts[key] == "# c\na = (\nb = 2\n"
    back = docs.change(key, 4, "# c\na = 1\nb = 2\n")  # the same text as version 2: nothing to re-run
    assert back.files == () and docs.view().line_map(key, 2).is_identity and not docs.view().held
    assert docs.view().line_map(key, 99) is None  # a version it never had
    assert docs.close(key).files == (key,)  # the disk differs from what counted


def test_a_buffer_opened_broken_leaves_the_disk_counting(tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    path.write_text("a = 1\n")
    key = str(path)
    docs = DocumentStore()
    opened = docs.open(key, 1, "x = (\na = 1\n")
    assert opened.files == () and opened.snapshot.text(key) is None  # the disk counts
    assert docs.view().line_map(key, None).line(1) == 2  # the disk's results, at the buffer's lines
    fixed = docs.change(key, 2, "x = 0\na = 1\n")
    assert fixed.files == (key,) and fixed.snapshot.text(key) == "x = 0\na = 1\n"
    assert docs.close(key).files == (key,)

    nb = str(tmp_path / "n.ipynb")
    docs.open(nb, 1, make_notebook([("code", "import torch"), ("markdown", "# t"), ("code", "x = 1\ny = 2")]))
    docs.change(nb, 2, make_notebook([("code", "import torch\n# new"), ("markdown", "# t"), ("code", "x = 1\ny = 2")]))
    lines = docs.view().line_map(nb, 1)  # a notebook's code lines, its code cells one after the other
    assert docs.view().tracks(nb) and [lines.line(i) for i in (1, 2, 3)] == [1, 3, 4]
    docs.change(nb, 3, make_notebook([("code", "import torch\n# new"), ("code", "x = (")]))
    assert nb in docs.view().held and docs.snapshot().version(nb) == 2  # a cell does not parse
