"""An analysis's summary of one target, as typed data every front end renders without knowing the
analysis (the report schema's ``targets[].analyses.<name>``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Union

from fxscope.model.wire import WireError, is_count, need, only

__all__ = ["AnalysisSummary", "Detail"]

#: A value an analysis may put in its summary's ``details``.
Detail = Union[str, int, float, bool, None]

_SUMMARY_KEYS = frozenset({"ok", "headline", "counts", "details", "duration_ms"})


@dataclass(frozen=True)
class AnalysisSummary:
    """What one analysis (a plug-in of the job layer) says about a target as a whole, in a shape
    every front end renders without knowing the analysis: whether the target passed it (``ok``),
    one line to show (``headline``), its ``counts`` (name -> count), its settings and verdicts
    (``details``, scalars) and how long it took.

    >>> s = AnalysisSummary.from_json({"ok": False, "headline": "2 graph breaks", "counts": {"breaks": 2}})
    >>> s.ok, s.counts["breaks"], AnalysisSummary.from_json(s.to_json()) == s
    (False, 2, True)
    """

    ok: bool
    headline: str
    counts: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    details: Mapping[str, Detail] = field(default_factory=lambda: MappingProxyType({}))
    duration_ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """The schema ``analyses.<name>`` object."""
        return {"ok": self.ok, "headline": self.headline, "counts": dict(self.counts),
                "details": dict(self.details), "duration_ms": self.duration_ms}

    @classmethod
    def from_json(cls, data: Any, where: str = "summary") -> AnalysisSummary:
        """Read an ``analyses.<name>`` object (strict: unknown or mistyped fields raise
        :class:`~fxscope.model.wire.WireError`)."""
        data = only(data, _SUMMARY_KEYS, where)
        counts = data.get("counts", {})
        if not isinstance(counts, dict) or not all(isinstance(k, str) and is_count(v) for k, v in counts.items()):
            raise WireError(f"{where}: 'counts' is not a map of names to counts")
        details = data.get("details", {})
        if not isinstance(details, dict) or not all(
                isinstance(k, str) and (v is None or isinstance(v, (str, int, float, bool))) for k, v in details.items()):
            raise WireError(f"{where}: 'details' is not a map of names to scalars")
        duration = data.get("duration_ms", 0.0)
        if isinstance(duration, bool) or not isinstance(duration, (int, float)):
            raise WireError(f"{where}: 'duration_ms' is not a number")
        return cls(need(data, "ok", bool, where), need(data, "headline", str, where), MappingProxyType(dict(counts)),
                   MappingProxyType(dict(details)), float(duration))

    def line(self, name: str) -> str:
        """``compile not ok: 2 graphs, 1 graph break`` : how a list shows it (``name``: its analysis)."""
        return f"{name} {'ok' if self.ok else 'not ok'}: {self.headline}"
