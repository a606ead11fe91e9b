"""The incremental parse check agrees with parsing the whole text, for any one-line-range edit of
a text that parses."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from fxscope.session.documents import DocumentStore
from fxscope.session.linemap import LineEdit, split_text
from fxscope.session.parsecheck import reparse, statement_spans

BASE = '''"""Doc."""
import torch


@decorator
class A(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        if x:
            return (x +
                    1)
        else:
            return x
x = 1; y = 2

try:
    pass
except E:
    pass
# trailing comment
'''

PIECES = ["", "    def f(self):", "        return 1", "else:", "    pass", "x = (", ")", "class B:", "@d",
          "def g():", "    '''", "'''", "  bad", "elif x:", "        y = [1,", "        2]", "# c", "x = 1 \\",
          "    y = 3", "finally:", "except:", "async def h():", "\tz = 1"]


@settings(deadline=None, max_examples=500)
@given(st.integers(0, 40), st.integers(0, 4), st.lists(st.sampled_from(PIECES), max_size=4))
def test_agrees_with_a_whole_parse(at: int, removed: int, inserted: list[str]) -> None:
    lines = split_text(BASE)
    spans = statement_spans(BASE)
    assert spans is not None
    start = min(at, len(lines)) + 1
    end = min(start + removed, len(lines) + 1)
    new_lines = lines[:start - 1] + inserted + lines[end - 1:]
    text = "\n".join(new_lines)
    assert reparse(spans, new_lines, LineEdit(start, end, len(inserted))) == statement_spans(text), text


@settings(deadline=None, max_examples=200)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 3), st.lists(st.sampled_from(PIECES), max_size=3)),
                min_size=1, max_size=8))
def test_the_document_store_knows_whether_each_version_parses(tmp_path_factory, steps) -> None:
    """Edits one after the other, through versions that do not parse and back: each version's
    check (from the last text that parsed) agrees with parsing it whole."""
    path = tmp_path_factory.mktemp("doc") / "m.py"
    path.write_text(BASE)
    key = str(path)
    docs = DocumentStore()
    docs.open(key, 1, BASE)
    lines = split_text(BASE)
    for version, (at, removed, inserted) in enumerate(steps, 2):
        start = min(at, len(lines)) + 1
        end = min(start + removed, len(lines) + 1)
        lines = lines[:start - 1] + inserted + lines[end - 1:]
        text = "\n".join(lines)
        docs.change(key, version, text, [LineEdit(start, end, len(inserted))])
        assert docs.parses(key) == (statement_spans(text) is not None), text
