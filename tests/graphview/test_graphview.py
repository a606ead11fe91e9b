"""The graph document (fxscope.graphview): module subgraphs, findings per target and module."""

from __future__ import annotations

import pytest

from fxscope.graphview import GraphModuleError, build_document, graph_document, module_subgraph


def _n(name: str, op: str, scope: str, inputs: list[str] = (), line: int | None = None) -> dict:
    node = {"name": name, "op": op, "target": name, "scope": scope, "scope_type": f"m.{scope or 'Net'}", "inputs": list(inputs)}
    if line:
        node.update(file="m.py", line=line)
    return node


GRAPHS = [{"module": "", "nodes": [
    _n("x", "placeholder", ""),
    _n("enc_lin", "call_module", "enc.lin", ["x"], 5),
    _n("relu", "call_function", "enc", ["enc_lin"], 6),
    _n("enc_attn_q", "call_module", "enc.attn.q", ["relu"], 9),
    _n("add", "call_function", "", ["enc_attn_q", "x"], 12),
    _n("output", "output", "", ["add"]),
]}, {"module": "dec", "nodes": [_n("y", "placeholder", "dec"), _n("dec_out", "call_module", "dec.out", ["y"], 20)]}]
MODULES = [{"path": "", "type": "m.Net", "status": "partial"}, {"path": "enc", "type": "m.Enc", "status": "traced"},
           {"path": "dec", "type": "m.Dec", "status": "failed"}, {"path": "head", "type": "m.Head", "status": "unvisited"}]
FINDINGS = [
    {"code": "FXS101", "severity": "error", "message": "if", "file": "m.py", "line": 21, "target": "m.py::Net",
     "scopes": [{"path": "dec", "type": "m.Dec", "target": "m.py::Net"}]},
    {"code": "FXS301", "severity": "hint", "message": "unused", "file": "m.py", "line": 3, "target": "m.py::Other",
     "scopes": [{"path": "head", "type": "m.Head", "target": "m.py::Other"}, {"path": "head", "type": "m.Head", "target": "m.py::Net"}]},
    {"code": "FXS104", "severity": "error", "message": "int", "file": "o.py", "line": 1, "target": "o.py::Else",
     "scopes": [{"path": "", "type": "o.Else", "target": "o.py::Else"}]},
]


def _doc(module: str | None) -> dict:
    return dict(build_document("m.py::Net", status="partial", graphs=GRAPHS, modules=MODULES, findings=FINDINGS, module=module))


def test_whole_target_keeps_every_graph_and_its_findings_only() -> None:
    doc = _doc(None)
    assert [g["module"] for g in doc["graphs"]] == ["", "dec"]
    assert doc["version"] == 1 and doc["status"] == "partial" and doc["module"] is None
    assert [f["code"] for f in doc["findings"]] == ["FXS101", "FXS301"]  # FXS301 is merged: Net is in its scopes
    assert len(doc["modules"]) == 4


def test_module_traced_inline_is_cut_out_of_its_parents_graph() -> None:
    doc = _doc("enc")
    assert [(g["module"], [n["name"] for n in g["nodes"]]) for g in doc["graphs"]] == [("", ["enc_lin", "relu", "enc_attn_q"])]
    assert [n["inputs"] for n in doc["graphs"][0]["nodes"]] == [[], ["enc_lin"], ["relu"]]  # `x` is outside the scope
    assert [m["path"] for m in doc["modules"]] == ["enc"]
    assert doc["findings"] == []
    assert [n["name"] for g in module_subgraph(GRAPHS, "enc.attn") for n in g["nodes"]] == ["enc_attn_q"]


def test_module_with_its_own_graph_and_findings() -> None:
    doc = _doc("dec")
    assert [(g["module"], len(g["nodes"])) for g in doc["graphs"]] == [("dec", 2)]
    assert [f["code"] for f in doc["findings"]] == ["FXS101"]


def test_module_without_nodes_still_has_its_findings() -> None:
    doc = _doc("head")
    assert doc["graphs"] == [] and [f["code"] for f in doc["findings"]] == ["FXS301"]


def test_unknown_module_or_target_is_an_error() -> None:
    with pytest.raises(GraphModuleError, match="no module 'nope'"):
        _doc("nope")
    with pytest.raises(GraphModuleError, match="no target"):
        graph_document({"targets": [], "findings": []}, "m.py::Net")


def test_graph_document_reads_a_report() -> None:
    report = {"targets": [{"id": "m.py::Net", "status": "partial", "graphs": GRAPHS, "modules": MODULES}], "findings": FINDINGS}
    assert graph_document(report, "m.py::Net", "enc") == _doc("enc")


def test_graphs_torch_compile_captured_keep_their_analysis_and_break() -> None:
    from fxscope.cli.graph_output import render_graphs
    from fxscope.model import Graphs, Report, ReportTarget, Summary

    node = {"name": "sum_1", "op": "call_method", "target": "sum", "scope": "fc", "scope_type": "m.Lin",
            "inputs": [], "file": "m.py", "line": 6}
    raw = [{"module": "", "nodes": [dict(node, name="x", op="placeholder", target="x", scope="")]},
           {"module": "", "analysis": "compile", "nodes": [node],
            "ends": {"reason": "Data-dependent branching", "file": "m.py", "line": 6}},
           {"module": "", "analysis": "compile", "nodes": [dict(node, name="mul", line=7)]}]
    doc = build_document("t", status="traced", graphs=raw)
    assert [(g.get("analysis"), g.get("ends")) for g in doc["graphs"]] == [
        (None, None), ("compile", {"reason": "Data-dependent branching", "file": "m.py", "line": 6}), ("compile", None)]
    # a module's view cuts the captured graphs by the module instances Dynamo recorded
    assert [n["name"] for g in build_document("t", status="traced", graphs=raw, module="fc")["graphs"]
            for n in g["nodes"]] == ["sum_1", "mul"]
    report = Report("/w", "", (ReportTarget("t", "factory", "m.py", 1, "traced", graphs=Graphs(json=raw)),), (),
                    Summary(1))
    text = render_graphs(report, "t", None, "text")
    assert "graph t (root)" in text
    assert "compile graph 1 of 2 of t (ends at the graph break at m.py:6: Data-dependent branching)" in text
    assert "compile graph 2 of 2 of t\n" in text
    assert 'label="compile graph 1 of 2 of t' in render_graphs(report, "t", None, "dot")
