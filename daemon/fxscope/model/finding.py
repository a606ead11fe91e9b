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

from fxscope.model.location import Location, Scope

__all__ = ["Finding"]


@dataclass(frozen=True)
class Finding:
    """One problem. ``location`` is where the offending code is (possibly an installed library);
    ``anchor`` the innermost workspace location on the way there; ``related`` the call chain,
    outermost first; ``targets`` every target that saw it (when more than one did)."""

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

    @property
    def primary(self) -> Location:
        """Where an editor shows it: the anchor when the file is outside the workspace."""
        if self.anchor is not None and _is_absolute(self.location.file):
            return self.anchor
        return self.location

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
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """Read a schema ``finding`` dict (a worker body's findings have no ``target`` yet)."""
        anchor = data.get("anchor")
        hint = data.get("hint")
        return cls(
            code=str(data["code"]),
            severity=str(data["severity"]),
            message=str(data["message"]),
            location=Location.from_json(data),
            hint=str(hint) if hint is not None else None,
            target=str(data.get("target") or ""),
            scopes=tuple(Scope.from_json(s) for s in data.get("scopes") or ()),
            anchor=Location.from_json(anchor) if anchor else None,
            related=tuple(Location.from_json(r) for r in data.get("related") or ()),
            targets=tuple(str(t) for t in data.get("targets") or ()),
        )


def _is_absolute(file: str) -> bool:
    return file.startswith("/") or (len(file) > 2 and file[1] == ":" and file[2] in "\\/")
