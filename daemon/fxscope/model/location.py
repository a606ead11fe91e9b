"""Source locations and module scopes, the report schema v1's ``location`` and ``scopes`` entries.

Lines and columns are 1-based; columns count code points (the report contract). ``file`` is
root-relative (posix) inside the workspace and absolute outside it (``outside``).

>>> loc = Location.from_json({"file": "m.py", "line": 3, "column": 9, "end_line": 3, "end_column": 17})
>>> loc.to_json()
{'file': 'm.py', 'line': 3, 'column': 9, 'end_line': 3, 'end_column': 17}
>>> Location("/site/lib.py", 3).outside, loc.outside
(True, False)
>>> Location.related_from_json({"file": "f.py", "line": 7, "message": "in build", "target": "small"}).target
'small'
>>> Scope.from_json({"path": "blocks.0", "type": "m.Block"}).to_json()
{'path': 'blocks.0', 'type': 'm.Block'}
>>> Location.from_json({"file": "nb.ipynb", "cell": 3, "line": 2}).to_json()
{'file': 'nb.ipynb', 'line': 2, 'cell': 3}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from fxscope.model.wire import WireError, need, opt, opt_position, position

__all__ = ["Location", "Scope", "is_absolute"]


def is_absolute(file: str) -> bool:
    """Whether a location's ``file`` is absolute (posix, or a Windows drive path): outside the
    workspace, whose files are root-relative."""
    return file.startswith("/") or (len(file) > 2 and file[1] == ":" and file[2] in "\\/")


@dataclass(frozen=True)
class Location:
    """A 1-based source range (code-point columns; ``end_column`` is exclusive, as in
    ``co_positions`` + 1). ``message`` is set on call-chain entries (``related``: what the line
    is doing), and ``target`` on those of a finding merged across targets whose call chains
    differ (the target whose chain the entry belongs to; see :meth:`related_from_json`).

    In a Jupyter notebook, lines count the notebook's code lines (its code cells one after the
    other) until a front end maps them to a ``cell`` (1-based, over all cells) and the lines of
    that cell (``fxscope.report.notebooks``); the report shows them mapped."""

    file: str
    line: int
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    message: str | None = None
    target: str | None = None
    cell: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The schema ``location`` dict (None fields omitted)."""
        out: dict[str, Any] = {"file": self.file, "line": self.line}
        for key in ("column", "end_line", "end_column", "message", "target", "cell"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "location") -> Location:
        """Read a ``location`` dict (also a finding or node dict: only its location keys); raises
        :class:`~fxscope.model.wire.WireError` when a key has the wrong type."""
        if not isinstance(data, Mapping):
            raise WireError(f"{where}: not an object")
        message = opt(data, "message", str, where) if "code" not in data else None
        return cls(need(data, "file", str, where), position(data, "line", where),
                   opt_position(data, "column", where), opt_position(data, "end_line", where),
                   opt_position(data, "end_column", where), message, None, opt_position(data, "cell", where))

    @classmethod
    def related_from_json(cls, data: Mapping[str, Any], where: str = "related") -> Location:
        """Read a call-chain entry (a finding's ``related[]``): a location with its ``message``
        and, in a finding merged across targets, its ``target`` (a graph node's ``target`` is
        its callee, so :meth:`from_json` never reads that key)."""
        loc = cls.from_json(data, where)
        target = opt(data, "target", str, where)
        return replace(loc, target=target) if target is not None else loc

    @property
    def outside(self) -> bool:
        """Whether the file lies outside the workspace (its path is absolute)."""
        return is_absolute(self.file)

    def range_key(self) -> tuple[str, int, int | None, int | None, int | None]:
        """(file, line, column, end_line, end_column): identity of the range."""
        return (self.file, self.line, self.column, self.end_line, self.end_column)


@dataclass(frozen=True)
class Scope:
    """A module instance: its ``path`` in the model (``blocks.0.attn``, ``""`` for the root), its
    qualified ``type``, and the ``target`` whose tracing saw it (set once findings are merged)."""

    path: str
    type: str
    target: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The schema ``scopes`` entry."""
        out: dict[str, Any] = {"path": self.path, "type": self.type}
        if self.target is not None:
            out["target"] = self.target
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "scope") -> Scope:
        """Read a ``scopes`` entry."""
        if not isinstance(data, Mapping):
            raise WireError(f"{where}: not an object")
        return cls(need(data, "path", str, where), need(data, "type", str, where), opt(data, "target", str, where))
