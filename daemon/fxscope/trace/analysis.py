"""One call from a built model to everything fxscope reports about it.

>>> import torch
>>> report = analyze(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
>>> report.status, [m["status"] for m in report.modules]
('traced', ['traced', 'leaf', 'leaf'])
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch.nn as nn
from torch.fx import Graph

from fxscope.trace._torch_compat import qualified_name
from fxscope.trace.collection import GraphCollection
from fxscope.trace.findings import Finding, FindingSet
from fxscope.trace.frames import INTERNAL, USER, FrameClassifier, SourceLocation
from fxscope.trace.hazards import find_hazards
from fxscope.trace.tracer import CONTAINER_TYPES, class_location, type_name

__all__ = ["analyze", "TraceReport", "graph_to_json"]


@dataclass
class TraceReport:
    """Everything one trace of a model produced: the collection, merged findings, module table."""

    collection: GraphCollection
    findings: list[Finding]
    modules: list[dict[str, Any]]
    status: str
    extra_findings: list[Finding] = field(default_factory=list)

    @property
    def nodes(self) -> int:
        """FX nodes over all graphs."""
        return sum(len(g.nodes) for _, _, g in self.collection.graphs())

    def to_json(self, graphs: bool = False) -> dict[str, Any]:
        """A JSON-able target body (schema ``target`` fields plus ``findings``; absolute paths)."""
        out: dict[str, Any] = {
            "status": self.status,
            "nodes": self.nodes,
            "modules": self.modules,
            "findings": [f.to_json() for f in self.findings],
            "forward_order": self.collection.forward_order,
        }
        if graphs:
            out["graphs"] = [
                {"module": path, "nodes": graph_to_json(g)} for path, _, g in self.collection.graphs()
            ]
        return out


def _target_str(node: Any) -> str:
    t = node.target
    if isinstance(t, str):
        return t
    try:
        return qualified_name(t)
    except Exception:  # noqa: BLE001 - anything fx records: its plain name when it has no qualified one
        return getattr(t, "__name__", repr(t))


def graph_to_json(graph: Graph) -> list[dict[str, Any]]:
    """Nodes of ``graph`` with scope, scope type and source line."""
    out = []
    files: dict[str, str] = {}  # thousands of nodes come from the same few files
    for n in graph.nodes:
        item: dict[str, Any] = {
            "name": n.name,
            "op": n.op,
            "target": _target_str(n),
            "scope": n.meta.get("fxscope_scope", ""),
            "scope_type": n.meta.get("fxscope_scope_type", ""),
            "inputs": [i.name for i in n.all_input_nodes],
        }
        src = n.meta.get("fxscope_source")
        if src is not None:
            file = files.get(src[0])
            if file is None:
                file = files[src[0]] = os.path.abspath(src[0])
            item["file"] = file
            item["line"] = src[1]
        shape = n.meta.get("fxscope_shape")
        if shape is not None:  # shape-aware mode
            item["shape"] = list(shape)
            item["dtype"] = n.meta.get("fxscope_dtype", "")
        out.append(item)
    return out


_class_sites: dict[type, tuple[str, int] | None] = {}


def _class_site(cls: type, classifier: FrameClassifier) -> tuple[str, int] | None:
    if cls in _class_sites:
        return _class_sites[cls]
    site = None
    forward = getattr(cls, "forward", None)
    if forward is None or forward is nn.Module.forward:  # no forward of its own: its class's file decides
        try:
            file = inspect.getsourcefile(cls)
        except TypeError:
            file = None
        model_code = file is not None and classifier._classify(os.path.abspath(file)) != INTERNAL
    else:
        code = getattr(inspect.unwrap(forward), "__code__", None)
        model_code = code is not None and classifier.kind(code) != INTERNAL
    if model_code:
        try:
            file = inspect.getsourcefile(cls)
            line = inspect.getsourcelines(cls)[1]
            if file:
                site = (os.path.abspath(file), max(line, 1))
        except (OSError, TypeError):
            site = None
    _class_sites[cls] = site
    return site


def _module_table(gc: GraphCollection, classifier: FrameClassifier) -> list[dict[str, Any]]:
    assert gc.model is not None
    state: dict[str, str] = {}
    rank = {"failed": 3, "traced": 2, "leaf": 1}
    for t in gc.tracers:
        for path, kind in t.completed:
            if rank.get(kind, 0) > rank.get(state.get(path, ""), 0):
                state[path] = kind
    leaf_check = gc.tracers[0]
    rows: list[dict[str, Any]] = []
    statuses: dict[str, str] = {}
    for path, m in reversed(list(gc.model.named_modules())):  # children before parents
        if gc.is_failed(m):
            status = "failed"
        elif isinstance(m, CONTAINER_TYPES):
            kids = [statuses.get(f"{path}.{n}" if path else n, "unvisited") for n, _ in m.named_children()]
            status = "traced" if any(k != "unvisited" for k in kids) else "unvisited"
        elif path in state:
            status = state[path]
        elif gc.is_unvisited(m):
            status = "unvisited"
        else:
            status = "leaf" if leaf_check.is_static_leaf(m, path) else "traced"
        statuses[path] = status
        row: dict[str, Any] = {
            "path": path,
            "type": type_name(m),
            "status": status,
            "params": sum(p.numel() for p in m.parameters(recurse=False)),
        }
        site = _class_site(type(m), classifier)
        if site is not None:
            row["file"], row["line"] = site
        rows.append(row)
    rows.reverse()
    # Inside a leaf that was called, submodules run as part of the leaf: never "unvisited".
    final: dict[str, str] = {}
    for row in rows:  # parents before children
        path = row["path"]
        if path and row["status"] == "unvisited" and final.get(path.rpartition(".")[0]) == "leaf":
            row["status"] = "leaf"
        final[path] = row["status"]
    return rows


def analyze(
    model: nn.Module,
    concrete_args: dict[str, Any] | None = None,
    *,
    is_user_file: Callable[[str], bool] | None = None,
    leaf_types: tuple[type, ...] = (),
    sites: dict[tuple[int, str], SourceLocation] | None = None,
    extra_findings: list[Finding] | None = None,
    inputs: Mapping[str, Any] | None = None,
    wrap_functions: tuple[Callable[..., Any], ...] = (),
    target_site: SourceLocation | None = None,
) -> TraceReport:
    """Trace ``model`` recursively and collect findings, hazards and module statuses. With
    ``inputs`` (forward parameter -> example tensor, any device), tracing is shape-aware
    (:mod:`fxscope.trace.shapes`). ``wrap_functions`` are recorded as one ``call_function`` node
    each, never traced into (fx's ``autowrap_functions``). ``target_site`` (where the target is
    defined in the workspace) anchors a finding about the root itself outside the workspace.

    A report whose status is ``failed`` or ``partial`` always has an error finding saying why."""
    gc = GraphCollection(is_user_file=is_user_file, leaf_types=leaf_types, inputs=inputs,
                         wrap_functions=wrap_functions, target_site=target_site)
    gc.sites = sites or {}
    gc.recursive_trace(model, concrete_args)
    findings = FindingSet()
    findings.extend(extra_findings or [])
    findings.extend(gc.findings)
    findings.extend(find_hazards(gc))
    modules = _module_table(gc, gc._classifier)
    if any(m["status"] == "failed" for m in modules):
        status = "partial" if len(gc) else "failed"
    else:
        status = "traced"
    if status != "traced" and not any(f.severity == "error" for f in findings.items()):
        unexplained = _unexplained_failure(gc, target_site)
        if unexplained is not None:
            findings.add(unexplained)
    return TraceReport(gc, findings.items(), modules, status, list(extra_findings or []))


def _unexplained_failure(gc: GraphCollection, target_site: SourceLocation | None) -> Finding | None:
    """FXS107 for a failed module when no error finding says why (no line of model code was on the
    stack when its forward failed): at its class, with the failure's message."""
    assert gc.model is not None
    failed = next((m for _, m in gc.model.named_modules() if gc.is_failed(m)), None)
    if failed is None:
        return None
    loc = class_location(type(failed))
    if loc is None:
        code = getattr(inspect.unwrap(type(failed).forward), "__code__", None)
        loc = SourceLocation(os.path.abspath(code.co_filename), code.co_firstlineno) if code else target_site
    if loc is None:
        return None
    anchor = None if gc._classifier._classify(loc.file) == USER else target_site
    path = gc.paths.get(failed, "")
    message = (f"`{type(failed).__qualname__}` could not be traced, and no line of model code was running when "
               f"it failed: {gc.failure_msg(failed) or 'unknown reason'}")
    return Finding("FXS107", message, loc, None, anchor, [], [(path, type_name(failed))])
