"""Graph nodes and class summaries as the result store answers them (hovers, code lenses, graph view).

>>> n = NodeInfo.from_json({"name": "relu", "op": "call_function", "target": "torch.relu", "scope": "",
...     "scope_type": "m.Net", "file": "m.py", "line": 5}, target="m.py::Net")
>>> n.location.line, n.to_json()["target_id"]
(5, 'm.py::Net')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from fxscope.model.analysis import AnalysisSummary
from fxscope.model.finding import Finding
from fxscope.model.location import Location

__all__ = ["CLASS_STATUSES", "ClassSummary", "GraphView", "NodeInfo"]

#: Status of a class in :class:`ClassSummary` (``pending``: queued or running; ``not-traced``: no
#: target traces it on its own and no traced model contains it).
CLASS_STATUSES = ("traced", "partial", "failed", "error", "skipped", "pending", "not-traced")


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """One FX graph node of one target: ``name``, ``op``, its call ``target`` (``node.target``),
    the module instance it came from (``scope``, ``scope_type``), the names of its ``inputs``, the
    source range that produced it, its example ``shape``/``dtype`` (shape-aware mode), and the id
    of the traced target (``target_id``). ``graph`` is the module path of the graph it belongs to
    (``""`` = the root graph)."""

    name: str
    op: str
    target: str
    scope: str
    scope_type: str
    location: Location | None = None
    shape: tuple[int, ...] | None = None
    dtype: str | None = None
    target_id: str = ""
    graph: str = ""
    inputs: tuple[str, ...] = ()

    def graph_json(self) -> dict[str, Any]:
        """The schema graph-node dict (``graphs[].nodes[]``)."""
        out: dict[str, Any] = {"name": self.name, "op": self.op, "target": self.target,
                               "scope": self.scope, "scope_type": self.scope_type, "inputs": list(self.inputs)}
        if self.location is not None:
            out.update(self.location.to_json())
        if self.shape is not None:
            out["shape"] = list(self.shape)
        if self.dtype is not None:
            out["dtype"] = self.dtype
        return out

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict: the schema graph-node keys plus ``target_id`` and ``graph``."""
        out = self.graph_json()
        out["target_id"] = self.target_id
        out["graph"] = self.graph
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any], *, target: str | None = None,
                  graph: str | None = None) -> NodeInfo:
        """Read a schema graph node (``target``/``graph`` default to the dict's own keys)."""
        shape = data.get("shape")
        dtype = data.get("dtype")
        file, line = data.get("file"), data.get("line")
        if file and line:
            column = data.get("column")
            location: Location | None = (Location(str(file), int(line)) if column is None and "end_line" not in data
                                         else Location.from_json(data))
        else:
            location = None
        return cls(
            str(data["name"]), str(data["op"]), str(data["target"]),
            str(data.get("scope", "")), str(data.get("scope_type", "")),
            location,
            tuple(int(x) for x in shape) if isinstance(shape, list) else None,
            str(dtype) if dtype is not None else None,
            target if target is not None else str(data.get("target_id", "")),
            graph if graph is not None else str(data.get("graph", "")),
            tuple(str(i) for i in data.get("inputs") or ()),
        )


@dataclass(frozen=True)
class ClassSummary:
    """What fxscope knows about one ``nn.Module`` class (hover on its name, code lens above it).

    ``targets``: ids of the targets that trace it (its own, and models containing it);
    ``instances``: module paths where it occurs in those models; ``leaf_children``: its
    submodules kept as leaves; ``findings``: how many findings lie in its file and line range;
    ``reason``: why it was skipped or failed, when it was; ``build`` and ``provenance``: how
    fxscope built its target on its own (``ViT(dim=64)``, ``as in README.md:42``), when it did so
    from something other than the constructor's defaults; ``reason_code``: the code of the finding
    that says why it was skipped (``FXS405``, ``FXS407``); ``analyses``: the summaries of the
    analyses its own target ran (by name)."""

    file: str
    line: int
    qualname: str
    type_name: str
    targets: tuple[str, ...]
    status: str
    nodes: int = 0
    instances: tuple[str, ...] = ()
    leaf_children: tuple[str, ...] = ()
    findings: int = 0
    reason: str | None = None
    build: str | None = None
    provenance: str | None = None
    reason_code: str | None = None
    analyses: Mapping[str, AnalysisSummary] = field(default_factory=lambda: MappingProxyType({}))
    #: The example inputs the analyses ran on, inferred for its own target, as said
    #: (``inputs (2, 3, 32, 32) as in tests/test_vit.py:14``).
    inputs: str | None = None
    #: The names of its own target's analyses (with a summary) that ran on those inputs.
    inputs_for: tuple[str, ...] = ()
    #: The analyses of its own target still running (its fx phase answered; theirs follows).
    analysing: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of every field."""
        return {"file": self.file, "line": self.line, "qualname": self.qualname,
                "type_name": self.type_name, "targets": list(self.targets), "status": self.status,
                "nodes": self.nodes, "instances": list(self.instances),
                "leaf_children": list(self.leaf_children), "findings": self.findings,
                "reason": self.reason, "build": self.build, "provenance": self.provenance,
                "reason_code": self.reason_code,
                "analyses": {name: summary.to_json() for name, summary in self.analyses.items()},
                "inputs": self.inputs, "inputs_for": list(self.inputs_for), "analysing": list(self.analysing)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ClassSummary:
        """Inverse of :meth:`to_json`."""
        return cls(
            file=str(data["file"]), line=int(data["line"]), qualname=str(data["qualname"]),
            type_name=str(data["type_name"]), targets=tuple(data.get("targets") or ()),
            status=str(data["status"]), nodes=int(data.get("nodes", 0)),
            instances=tuple(data.get("instances") or ()),
            leaf_children=tuple(data.get("leaf_children") or ()),
            findings=int(data.get("findings", 0)), reason=data.get("reason"),
            build=data.get("build"), provenance=data.get("provenance"), reason_code=data.get("reason_code"),
            analyses=MappingProxyType({str(k): AnalysisSummary.from_json(v, f"analyses.{k}")
                                       for k, v in (data.get("analyses") or {}).items()}),
            inputs=data.get("inputs"), inputs_for=tuple(str(n) for n in data.get("inputs_for") or ()),
            analysing=tuple(str(n) for n in data.get("analysing") or ()),
        )


@dataclass(frozen=True)
class GraphView:
    """The graphs of one target (optionally one module's): every node and every finding, JSON-able
    for the graph view. ``status`` is the target's status (``pending`` when never traced yet)."""

    target: str
    module: str | None
    status: str
    graphs: tuple[tuple[str, tuple[NodeInfo, ...]], ...]
    findings: tuple[Finding, ...]
    edges: tuple[tuple[str, str, str], ...] = ()  # (graph module, input node, user node)

    def to_json(self) -> dict[str, Any]:
        """``{"target", "module", "status", "graphs": [{"module", "nodes", "edges"}], "findings"}``."""
        graphs = []
        for module, nodes in self.graphs:
            edges = [[src, dst] for g, src, dst in self.edges if g == module]
            graphs.append({"module": module, "nodes": [n.to_json() for n in nodes], "edges": edges})
        return {"target": self.target, "module": self.module, "status": self.status,
                "graphs": graphs, "findings": [f.to_json() for f in self.findings]}
