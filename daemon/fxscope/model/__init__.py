"""Plain data shared by every layer (no torch, no processes): the finding-code table
(:mod:`fxscope.model.codes`), typed findings, locations, scopes, graph nodes, class summaries and
buffer snapshots, a target's typed outcome and the typed report (LSP position conversion lives in
``fxscope.lsp.positions``). Each dataclass
has ``to_json``/``from_json``; the report schema is their wire form.

>>> from fxscope.model import Finding, Location
>>> Location("m.py", 3).to_json()
{'file': 'm.py', 'line': 3}
"""

from fxscope.model.finding import Finding
from fxscope.model.location import Location, Scope
from fxscope.model.nodes import CLASS_STATUSES, ClassSummary, GraphView, NodeInfo
from fxscope.model.analysis import AnalysisSummary
from fxscope.model.outcome import GraphInfo, Graphs, ModuleInfo, TargetOutcome
from fxscope.model.report import Report, ReportTarget, Summary
from fxscope.model.snapshot import EMPTY_SNAPSHOT, Snapshot

__all__ = [
    "CLASS_STATUSES",
    "EMPTY_SNAPSHOT",
    "AnalysisSummary",
    "ClassSummary",
    "Finding",
    "GraphInfo",
    "GraphView",
    "Graphs",
    "Location",
    "ModuleInfo",
    "NodeInfo",
    "Report",
    "ReportTarget",
    "Scope",
    "Snapshot",
    "Summary",
    "TargetOutcome",
]
