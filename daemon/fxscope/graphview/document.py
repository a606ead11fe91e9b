"""Build the graph document (version 1) of a target, or of one module inside it.

A module traced inline in its parent's graph has no graph of its own: its document holds the
nodes of its scope (the module and everything below it) cut out of the graph that contains them.
A module with findings carries them, also when it has no nodes (its forward failed).

>>> report = {"targets": [{"id": "m.py::Net", "status": "traced", "modules": [], "graphs": [
...     {"module": "", "nodes": [
...         {"name": "x", "op": "placeholder", "target": "x", "scope": "", "scope_type": "m.Net", "inputs": []},
...         {"name": "fc", "op": "call_module", "target": "fc", "scope": "fc",
...          "scope_type": "torch.nn.Linear", "inputs": ["x"], "file": "m.py", "line": 9}]}]}],
...     "findings": []}
>>> doc = graph_document(report, "m.py::Net", "fc")
>>> [(g["module"], [n["name"] for n in g["nodes"]]) for g in doc["graphs"]]
[('', ['fc'])]
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, TypedDict

__all__ = ["GraphDocument", "GraphModuleError", "build_document", "graph_document", "module_subgraph",
           "within", "target_findings"]

VERSION = 1


class GraphDocument(TypedDict):
    """The JSON graph document the renderer draws (see docs/graph-format.md)."""

    version: int
    target: str
    status: str
    module: str | None
    graphs: list[dict[str, Any]]   # [{"module": path, "nodes": [node dict, ...]}]
    modules: list[dict[str, Any]]  # [{"path", "type", "status", "file"?, "line"?}]
    findings: list[dict[str, Any]]  # report findings (schema v1) of this target / module


class GraphModuleError(ValueError):
    """The requested target or module does not exist."""


def within(scope: str, prefix: str) -> bool:
    """Whether module path ``scope`` is ``prefix`` or below it (every path is below the root '')."""
    return prefix == "" or scope == prefix or scope.startswith(prefix + ".")


def _node(n: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"name": str(n["name"]), "op": str(n["op"]), "target": str(n.get("target", "")),
           "scope": str(n.get("scope", "")), "scope_type": str(n.get("scope_type", "")),
           "inputs": [str(i) for i in n.get("inputs") or ()]}
    if n.get("file"):
        out["file"] = str(n["file"])
        out["line"] = int(n.get("line") or 0)
        if isinstance(n.get("cell"), int):  # a notebook's, shown in its cell
            out["cell"] = n["cell"]
    if isinstance(n.get("shape"), list):  # shape-aware tracing
        out["shape"] = [int(d) for d in n["shape"]]
        out["dtype"] = str(n.get("dtype") or "")
    return out


def _entry(g: Mapping[str, Any], nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A graph of the document: its module and nodes, and for a graph torch.compile captured its
    ``analysis`` (``"compile"``) and ``ends`` (the graph break that ended it: reason, file, line)."""
    out: dict[str, Any] = {"module": str(g.get("module", "")), "nodes": nodes}
    analysis = g.get("analysis")
    if isinstance(analysis, str) and analysis != "fx":
        out["analysis"] = analysis
    ends = g.get("ends")
    if isinstance(ends, Mapping) and ends.get("file"):
        out["ends"] = {"reason": str(ends.get("reason") or ""), "file": str(ends["file"]), "line": int(ends.get("line") or 0)}
    return out


def module_subgraph(graphs: Iterable[Mapping[str, Any]], module: str) -> list[dict[str, Any]]:
    """The graphs of ``module``: its own graph when it was traced on its own, else the nodes of
    its scope cut out of the graphs of enclosing modules that traced it inline (inputs from
    outside the scope are dropped)."""
    graphs = list(graphs)
    own = [g for g in graphs if g.get("module", "") == module]
    if own:
        return [_entry(g, [_node(n) for n in g.get("nodes") or ()]) for g in own]
    out = []
    for g in graphs:
        if not within(module, str(g.get("module", ""))):
            continue  # only a graph of an enclosing module can hold this module's nodes inline
        nodes = [_node(n) for n in g.get("nodes") or () if within(str(n.get("scope", "")), module)]
        if not nodes:
            continue
        names = {n["name"] for n in nodes}
        for n in nodes:
            n["inputs"] = [i for i in n["inputs"] if i in names]
        out.append(_entry(g, nodes))
    return out


def target_findings(findings: Iterable[Mapping[str, Any]], target_id: str, module: str | None = None) -> list[dict[str, Any]]:
    """The findings of ``target_id`` (a finding merged across targets names each in its scopes),
    only those seen in ``module`` or below it when a module is given."""
    out = []
    for f in findings:
        scopes = [s for s in f.get("scopes") or () if s.get("target", f.get("target")) == target_id]
        if f.get("target") != target_id and not scopes:
            continue
        if module is not None and module != "" and not any(within(str(s.get("path", "")), module) for s in scopes):
            continue
        out.append(dict(f))
    return out


def build_document(target_id: str, *, status: str, graphs: Iterable[Mapping[str, Any]],
                   modules: Iterable[Mapping[str, Any]] = (), findings: Iterable[Mapping[str, Any]] = (),
                   module: str | None = None) -> GraphDocument:
    """The graph document of one target from its parts: graphs as in the report
    (``[{"module", "nodes"}]``, node dicts with ``inputs``), the report's ``modules`` entries and
    report findings (filtered to this target, and to ``module`` when given).

    Raises GraphModuleError for a module path the target does not have."""
    graphs = list(graphs)
    entries = [dict(m) for m in modules]
    shown = target_findings(findings, target_id, module)
    if module is None:
        chosen = [_entry(g, [_node(n) for n in g.get("nodes") or ()]) for g in graphs]
    else:
        chosen = module_subgraph(graphs, module)
        known = module == "" or any(m.get("path") == module for m in entries) or bool(shown)
        if not chosen and not known:
            raise GraphModuleError(f"target {target_id!r} has no module {module!r}")
        entries = [m for m in entries if within(str(m.get("path", "")), module)]
    return GraphDocument(version=VERSION, target=target_id, status=status, module=module,
                         graphs=chosen, modules=entries, findings=shown)


def graph_document(report: Mapping[str, Any], target_id: str, module: str | None = None) -> GraphDocument:
    """The graph document of ``target_id`` in a version-1 report made with graphs
    (``fxscope check --format json --graphs``). Raises GraphModuleError for an unknown target
    or module."""
    entry = next((t for t in report.get("targets") or () if t.get("id") == target_id), None)
    if entry is None:
        raise GraphModuleError(f"no target {target_id!r} in the report")
    return build_document(target_id, status=str(entry.get("status", "")), graphs=entry.get("graphs") or (),
                          modules=entry.get("modules") or (), findings=report.get("findings") or (),
                          module=module)
