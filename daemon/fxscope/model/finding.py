"""A finding as typed data: the report schema v1 ``finding`` object.

>>> f = Finding.from_json({"code": "FXS101", "severity": "error", "message": "m", "file": "m.py",
...     "line": 4, "column": 12, "target": "m.py::Net", "scopes": [{"path": "", "type": "m.Net"}]})
>>> f.location.line, f.scopes[0].path, f.to_json()["target"]
(4, '', 'm.py::Net')
>>> Finding.from_json(f.to_json()) == f
True
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fxscope.model.codes import SEVERITIES
from fxscope.model.location import Location, Scope
from fxscope.model.wire import WireError, items, need, opt, strings

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """One problem. ``location`` is where the offending code is (possibly an installed library);
    ``anchor`` the innermost workspace location on the way there; ``related`` the call chain,
    outermost first; ``targets`` every target that saw it (when more than one did); ``sites``
    the other places of the same file where the same library root cause was met (each a whole
    finding of its own, see :mod:`fxscope.report.causes`), when findings are grouped by cause."""

    code: str
    severity: str
    message: str
    location: Location
    hint: str | None = None
    target: str = ""
    scopes: tuple[Scope, ...] = ()
    anchor: Location | None = None
    related: tuple[Location, ...] = ()
    targets: tuple[str, ...] = field(default=())
    sites: tuple[Finding, ...] = field(default=())

    @property
    def primary(self) -> Location:
        """Where every front end shows, suppresses and fingerprints it: its own location, or its
        anchor when that location is outside the workspace (an installed library). The one rule
        for where a finding is shown."""
        if self.anchor is not None and self.location.outside:
            return self.anchor
        return self.location

    @property
    def origin(self) -> Location | None:
        """Its own location when that is not where it is shown (outside the workspace, anchored)."""
        return self.location if self.anchor is not None and self.location.outside else None

    def all_targets(self) -> tuple[str, ...]:
        """Every target that saw this finding (``targets``, else ``target``)."""
        if self.targets:
            return self.targets
        return (self.target,) if self.target else ()

    def to_json(self) -> dict[str, Any]:
        """The schema ``finding`` dict."""
        out: dict[str, Any] = {"code": self.code, "severity": self.severity, "message": self.message}
        if self.hint is not None:
            out["hint"] = self.hint
        out.update({k: v for k, v in self.location.to_json().items() if k != "message"})
        out["target"] = self.target
        if self.anchor is not None:
            out["anchor"] = self.anchor.to_json()
        if self.scopes:
            out["scopes"] = [s.to_json() for s in self.scopes]
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        if self.targets:
            out["targets"] = list(self.targets)
        if self.sites:
            out["sites"] = [s.to_json() for s in self.sites]
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, target: str | None = None, where: str = "finding") -> Finding:
        """Read a schema ``finding`` dict; ``target`` (when given) is the target that saw it (a
        worker body's findings have no ``target`` of their own). Raises
        :class:`~fxscope.model.wire.WireError` (naming ``where``) when it is malformed."""
        location = Location.from_json(data, where)
        code = need(data, "code", str, where)
        if not (len(code) == 6 and code.startswith("FXS") and code[3:].isdigit()):
            raise WireError(f"{where}: code {code!r} is not a finding code")
        severity = data.get("severity")
        if not (isinstance(severity, str) and severity in SEVERITIES):
            raise WireError(f"{where}: 'severity' is missing" if "severity" not in data else f"{where}: bad severity")
        anchor = data.get("anchor")
        return cls(
            code=code,
            severity=severity,
            message=need(data, "message", str, where),
            location=location,
            hint=opt(data, "hint", str, where),
            target=target if target is not None else (opt(data, "target", str, where) or ""),
            scopes=tuple(Scope.from_json(s, f"{where}.scopes[{i}]") for i, s in enumerate(items(data, "scopes", where))),
            anchor=Location.from_json(anchor, f"{where}.anchor") if anchor else None,
            related=tuple(Location.related_from_json(r, f"{where}.related[{i}]")
                          for i, r in enumerate(items(data, "related", where))),
            targets=strings(data, "targets", where),
            sites=tuple(cls.from_json(s, where=f"{where}.sites[{i}]") for i, s in enumerate(items(data, "sites", where))),
        )
