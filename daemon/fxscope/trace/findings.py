"""Findings: a code, a plain-language message, a fix hint, an exact location and its scopes.

The same problem seen in many module instances is one finding with many scopes:

>>> from fxscope.trace.frames import SourceLocation
>>> fs = FindingSet()
>>> loc = SourceLocation("/w/m.py", 3, 8, 3, 20)
>>> _ = fs.add(Finding("FXS101", "msg", loc, scopes=[("blocks.0", "m.Block")]))
>>> _ = fs.add(Finding("FXS101", "msg", loc, scopes=[("blocks.1", "m.Block")]))
>>> [s[0] for s in fs.items()[0].scopes]
['blocks.0', 'blocks.1']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fxscope.model.codes import CODES
from fxscope.trace.frames import SourceLocation

__all__ = ["Finding", "FindingSet"]


@dataclass
class Finding:
    """One problem. ``location`` is where the offending code is (possibly site-packages);
    ``anchor`` the innermost workspace location on the way there when it differs;
    ``related`` the call chain, outermost first; ``scopes`` (module path, qualified type)."""

    code: str
    message: str
    location: SourceLocation
    hint: str | None = None
    anchor: SourceLocation | None = None
    related: list[SourceLocation] = field(default_factory=list)
    scopes: list[tuple[str, str]] = field(default_factory=list)

    @property
    def severity(self) -> str:
        """The code's severity."""
        return CODES[self.code].severity

    def key(self) -> tuple[Any, ...]:
        """Identity for merging: the same code at the same range, reached from the same workspace
        anchor (library code called from two places of the workspace is two findings)."""
        loc = self.location
        anchor = self.anchor
        where = (anchor.file, anchor.line, anchor.column, anchor.end_line, anchor.end_column) if anchor else None
        return (self.code, loc.file, loc.line, loc.column, loc.end_line, loc.end_column, where)

    def add_scope(self, path: str, type_name: str) -> None:
        """Add a module instance (ignored when already listed)."""
        if (path, type_name) not in self.scopes:
            self.scopes.append((path, type_name))

    def to_json(self) -> dict[str, Any]:
        """A report-schema finding without ``target`` (absolute file paths)."""
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        out.update(self.location.to_json())
        if self.anchor is not None:
            out["anchor"] = self.anchor.to_json()
        if self.scopes:
            out["scopes"] = [{"path": p, "type": t} for p, t in self.scopes]
        if self.related:
            out["related"] = [
                {**r.to_json(), "message": f"in {r.function}" if r.function else "called here"}
                for r in self.related
            ]
        return out


class FindingSet:
    """Findings merged by code and location, in first-seen order."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[Any, ...], Finding] = {}

    def add(self, finding: Finding) -> Finding:
        """Add ``finding`` or merge its scopes into an equal one; returns the stored finding."""
        existing = self._by_key.get(finding.key())
        if existing is None:
            self._by_key[finding.key()] = finding
            return finding
        for path, type_name in finding.scopes:
            existing.add_scope(path, type_name)
        return existing

    def extend(self, findings: "FindingSet | list[Finding]") -> None:
        """Add every finding of another set or list."""
        for f in (findings.items() if isinstance(findings, FindingSet) else findings):
            self.add(f)

    def items(self) -> list[Finding]:
        """Every finding, first-seen order."""
        return list(self._by_key.values())

    def __len__(self) -> int:
        return len(self._by_key)
