"""The report as typed data: what ``fxscope check`` computed, before it is printed.

:func:`fxscope.report.build.build_report` makes it from typed outcomes; the filters
(:mod:`fxscope.report.filters`, :mod:`fxscope.report.baseline`) return new reports; the output
formats read it, and ``--format json`` prints :meth:`Report.to_json`, the document that
``report.schema.json`` describes.

>>> doc = {"version": 2, "tool": {"name": "fxscope", "version": "0.1"}, "torch": "2.3", "root": "/w",
...        "targets": [{"id": "m.py::Net", "kind": "class", "file": "m.py", "line": 3, "status": "traced",
...                     "modules": []}],
...        "findings": [], "summary": {"targets": 1, "by_status": {"traced": 1}, "by_severity": {},
...                                    "duration_ms": 5}}
>>> report = Report.from_json(doc)
>>> report.targets[0].status, report.summary.duration_ms, report.to_json()["summary"]["cached"]
('traced', 5.0, 0)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fxscope import __version__
from fxscope.model.finding import Finding
from fxscope.model.analysis import AnalysisSummary
from fxscope.model.inputs import InferredInputs
from fxscope.model.outcome import Graphs, ModuleInfo
from fxscope.model.recipe import Recipe
from fxscope.model.sandbox import SandboxStatus

__all__ = ["REPORT_VERSION", "Report", "ReportTarget", "Summary"]

#: The ``version`` of the report document (2: a target's analysis summaries are under ``analyses``,
#: one generic object per analysis; version 1 documents are still read, without them).
REPORT_VERSION = 2


def _counts(value: Any) -> Mapping[str, int]:
    return MappingProxyType({str(k): int(v) for k, v in (value or {}).items()})


@dataclass(frozen=True)
class ReportTarget:
    """One checked target: where it is defined, how it ended and what it holds (schema
    ``targets[]``). ``graphs`` is set only when the graphs were asked for (``--graphs``);
    ``analyses``: the summary of each analysis that ran and has one."""

    id: str
    kind: str
    file: str
    line: int
    status: str
    cached: bool = False
    duration_ms: float = 0.0
    nodes: int = 0
    modules: tuple[ModuleInfo, ...] = ()
    graphs: Graphs | None = None
    analyses: Mapping[str, AnalysisSummary] = field(default_factory=lambda: MappingProxyType({}))
    #: How fxscope built a class target on its own (its provenance), when it did.
    build: Recipe | None = None
    #: In a notebook: the cell whose lines ``line`` counts (set when the report is shown).
    cell: int | None = None
    #: The example inputs inferred for a class, which the analyses ran on.
    inputs: InferredInputs | None = None

    def to_json(self) -> dict[str, Any]:
        """The schema ``target`` object."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "file": self.file, "line": self.line}
        if self.cell is not None:
            out["cell"] = self.cell
        out.update({"status": self.status, "cached": self.cached, "duration_ms": round(self.duration_ms, 3),
                    "nodes": self.nodes, "modules": [m.to_json() for m in self.modules]})
        if self.build is not None:
            out["build"] = self.build.to_json()
        if self.graphs is not None:
            out["graphs"] = self.graphs.to_json()
        if self.analyses:
            out["analyses"] = {name: summary.to_json() for name, summary in self.analyses.items()}
        if self.inputs is not None:
            out["inputs"] = self.inputs.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ReportTarget:
        """Read a schema ``target`` object."""
        graphs = data.get("graphs")
        analyses = data.get("analyses")
        return cls(str(data["id"]), str(data["kind"]), str(data["file"]), int(data["line"]),
                   str(data["status"]), bool(data.get("cached", False)), float(data.get("duration_ms") or 0.0),
                   int(data.get("nodes") or 0), tuple(ModuleInfo.from_json(m) for m in data.get("modules") or ()),
                   Graphs(json=graphs, target=str(data["id"])) if isinstance(graphs, list) else None,
                   MappingProxyType({str(k): AnalysisSummary.from_json(v, f"analyses.{k}") for k, v in analyses.items()})
                   if isinstance(analyses, Mapping) else MappingProxyType({}),
                   Recipe.from_json(data["build"]) if isinstance(data.get("build"), dict) else None,
                   int(data["cell"]) if isinstance(data.get("cell"), int) else None,
                   InferredInputs.from_json(data["inputs"]) if data.get("inputs") is not None else None)


@dataclass(frozen=True)
class Summary:
    """The report's counts: targets, targets per status, findings per severity, targets answered
    from the cache, the wall time; and, once filters ran, how many findings were suppressed by
    comments or found in the baseline (None: that filter did not run)."""

    targets: int
    by_status: Mapping[str, int] = field(default_factory=lambda: _counts({}))
    by_severity: Mapping[str, int] = field(default_factory=lambda: _counts({}))
    cached: int = 0
    duration_ms: float = 0.0
    suppressed: int | None = None
    baselined: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The schema ``summary`` object."""
        out: dict[str, Any] = {"targets": self.targets, "by_status": dict(self.by_status),
                               "by_severity": dict(self.by_severity), "cached": self.cached,
                               "duration_ms": round(self.duration_ms, 3)}
        if self.suppressed is not None:
            out["suppressed"] = self.suppressed
        if self.baselined is not None:
            out["baselined"] = self.baselined
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Summary:
        """Read a schema ``summary`` object."""
        def opt(key: str) -> int | None:
            value = data.get(key)
            return int(value) if value is not None else None

        return cls(int(data.get("targets") or 0), _counts(data.get("by_status")), _counts(data.get("by_severity")),
                   int(data.get("cached") or 0), float(data.get("duration_ms") or 0.0), opt("suppressed"),
                   opt("baselined"))


@dataclass(frozen=True)
class Report:
    """A whole report: the workspace ``root`` (absolute), the ``torch`` version that traced it,
    every checked target, the findings (merged across targets, sorted) and the summary."""

    root: str
    torch: str
    targets: tuple[ReportTarget, ...]
    findings: tuple[Finding, ...]
    summary: Summary
    tool_version: str = ""
    #: Whether the user code the check ran was sandboxed (optional in the document).
    sandbox: SandboxStatus | None = None

    def to_json(self) -> dict[str, Any]:
        """The report document (``report.schema.json``, version :data:`REPORT_VERSION`)."""
        return {
            "version": REPORT_VERSION,
            "tool": {"name": "fxscope", "version": self.tool_version or __version__},
            "torch": self.torch,
            "root": self.root,
            "targets": [t.to_json() for t in self.targets],
            "findings": [f.to_json() for f in self.findings],
            "summary": self.summary.to_json(),
            **({"sandbox": self.sandbox.to_json()} if self.sandbox is not None else {}),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Report:
        """Read a report document (as ``--format json`` or the daemon sends it)."""
        tool = data.get("tool") or {}
        return cls(str(data["root"]), str(data.get("torch", "")),
                   tuple(ReportTarget.from_json(t) for t in data.get("targets") or ()),
                   tuple(Finding.from_json(f) for f in data.get("findings") or ()),
                   Summary.from_json(data.get("summary") or {}),
                   str(tool.get("version", "")) if isinstance(tool, Mapping) else "",
                   SandboxStatus.from_json(data.get("sandbox")))
