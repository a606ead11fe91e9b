"""Reading source trees the way every static scan of a workspace does: a parse that never raises
or warns, one-line texts for messages, and the statement blocks nested in a statement.

>>> tree = parse_quietly("try:\\n    a = 1\\nexcept E:\\n    b = 2\\nfinally:\\n    c = 3\\n")
>>> [[type(s).__name__ for s in block] for block in nested_blocks(tree.body[0])]
[['Assign'], [], ['Assign'], ['Assign']]
>>> parse_quietly("def (") is None
True
>>> one_line("net(\\n    x)", 6)
'net...'
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Iterator

__all__ = ["nested_blocks", "one_line", "parse_quietly"]


def parse_quietly(source: str) -> ast.Module | None:
    """The module's tree, or None when it does not parse (syntax, null bytes, nesting too deep);
    no SyntaxWarning is printed (a workspace's escapes are not ours to report)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``...``."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def nested_blocks(stmt: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists inside ``stmt``: its body, ``else`` and ``finally`` (empty ones
    included), then each ``except`` handler's and each ``match`` case's body."""
    for name in ("body", "orelse", "finalbody"):
        block = getattr(stmt, name, None)
        if isinstance(block, list):
            yield block
    for handler in getattr(stmt, "handlers", None) or ():
        yield handler.body
    for case in getattr(stmt, "cases", None) or ():
        yield case.body
