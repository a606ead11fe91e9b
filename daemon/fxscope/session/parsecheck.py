"""Whether an edited Python buffer still parses, without parsing all of it on every keystroke.

A text that parses is a sequence of top-level statements. An edit inside one of them (or between
two) changes only that part: the edited text parses exactly when the part it touched, from the
statement before the edit to the statement after it, parses on its own (the neighbours are
included because typed lines can join them: an indented line below a class continues it, a
decorator or an open bracket above a statement takes it in). So a keystroke in a 5,000-line
file parses a few classes, not the file.

>>> spans = statement_spans("import torch\\n\\nclass A:\\n    x = 1\\n")
>>> spans
((1, 1), (3, 4))
>>> reparse(spans, split_text("import torch\\n\\nclass A:\\n    x = 1\\n    y = (\\n"), LineEdit(5, 5, 1))
>>> reparse(spans, split_text("import torch\\n\\nclass A:\\n    x = 1\\n    y = 2\\n"), LineEdit(5, 5, 1))
((1, 1), (3, 5))
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Sequence

from fxscope.session.linemap import LineEdit, split_text  # noqa: F401 - the module's examples use it

__all__ = ["Spans", "reparse", "statement_spans"]

#: The first and last line (1-based) of each top-level statement, decorators included, in order.
Spans = tuple[tuple[int, int], ...]


def statement_spans(text: str, offset: int = 0) -> Spans | None:
    """The top-level statements of ``text`` (their lines moved down by ``offset``); None when it
    does not parse."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning: invalid escapes and the like
            tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    spans = []
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
        spans.append((first + offset, (node.end_lineno or node.lineno) + offset))
    return tuple(spans)


def reparse(spans: Spans, lines: Sequence[str], edit: LineEdit) -> Spans | None:
    """The statements of the text ``lines`` that one ``edit`` made of a text whose statements
    were ``spans`` (which parsed); None when it does not parse."""
    low, high = edit.start, edit.end - 1  # the old lines replaced (none for an insertion)
    touched = [s for s in spans if s[0] <= high and s[1] >= low]
    before = [s for s in spans if s[1] < low and s not in touched]
    after = [s for s in spans if s[0] > high and s not in touched]
    touched += before[-1:] + after[:1]
    start = min([low] + [s[0] for s in touched])
    end = max([high] + [s[1] for s in touched])
    delta = edit.count - (edit.end - edit.start)
    while end + delta < len(lines) and lines[end + delta - 1].endswith("\\"):
        end += 1  # a backslash joins the next line (a comment below ``x = 1 \``) to the part
    part = "\n".join(lines[start - 1:end + delta]) + "\n"
    inner = statement_spans(part, start - 1)
    if inner is None:
        return None
    return (tuple(s for s in spans if s[1] < start) + inner
            + tuple((s[0] + delta, s[1] + delta) for s in spans if s[0] > end))
