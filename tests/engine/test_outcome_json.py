"""The one strict reader of result bodies (a job's answer and cache entries),
:meth:`TargetOutcome.from_json`: unknown, missing or mistyped fields are a :class:`WireError` naming
where, never another exception; its fast paths for graph nodes and module entries accept exactly
what the full checks accept; what it accepts renders in every format."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fxscope.model import AnalysisSummary, TargetOutcome
from fxscope.model.wire import WireError


def payload_problem(body: Any) -> str | None:
    """Why :meth:`TargetOutcome.from_json` rejects ``body`` (None: it reads it)."""
    try:
        TargetOutcome.from_json(body, target="m.py::Net")
    except WireError as e:
        return str(e)
    return None

NODE = {"name": "layers_0", "op": "call_module", "target": "layers.0", "scope": "layers.0",
        "scope_type": "torch.nn.modules.linear.Linear", "inputs": ["x"], "file": "m.py", "line": 14}
MODULE = {"path": "layers.0", "type": "torch.nn.modules.linear.Linear", "status": "leaf", "params": 72}


def body(node: dict[str, Any] | None = None, module: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "status": "traced", "nodes": 2, "findings": [],
        "modules": [{"path": "", "type": "m.Net", "status": "traced", "params": 0, "file": "m.py", "line": 3},
                    MODULE if module is None else module],
        "graphs": [{"module": "", "nodes": [
            {"name": "x", "op": "placeholder", "target": "x", "scope": "", "scope_type": "m.Net", "inputs": []},
            NODE if node is None else node]}],
    }


def with_(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in changes.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


def test_a_well_formed_body_passes() -> None:
    assert payload_problem(body()) is None
    assert payload_problem(body(node=with_(NODE, file=..., line=...))) is None  # an unlocated node
    assert payload_problem(body(node=with_(NODE, column=3, end_line=14, end_column=9))) is None
    assert payload_problem(body(module=with_(MODULE, params=...))) is None
    assert payload_problem(body(module=with_(MODULE, file="m.py", line=2))) is None


@pytest.mark.parametrize("node", [
    with_(NODE, op="call_everything"),
    with_(NODE, name=3),
    with_(NODE, scope=...),
    with_(NODE, scope_type=None),
    with_(NODE, file=None),
    with_(NODE, line=...),
    with_(NODE, file=...),
    with_(NODE, line=0),
    with_(NODE, line=True),
    with_(NODE, line="14"),
    with_(NODE, column=0),
    "a string",
], ids=["op", "name", "no-scope", "scope-type", "file-none", "no-line", "no-file", "line-0", "line-bool",
        "line-str", "column-0", "not-an-object"])
def test_a_malformed_node_is_named(node: Any) -> None:
    assert (payload_problem(body(node=node)) or "").startswith("graphs[0].nodes[1]")


@pytest.mark.parametrize("module", [
    with_(MODULE, status="gone"),
    with_(MODULE, type=None),
    with_(MODULE, path=...),
    with_(MODULE, params=-1),
    with_(MODULE, params=True),
    with_(MODULE, file="m.py"),
    with_(MODULE, line=2),
    with_(MODULE, file=None, line=2),
    [MODULE],
], ids=["status", "type", "no-path", "params-negative", "params-bool", "file-without-line",
        "line-without-file", "file-none", "not-an-object"])
def test_a_malformed_module_is_named(module: Any) -> None:
    assert (payload_problem(body(module=module)) or "").startswith("modules[1]")


def test_string_subclasses_take_the_full_check() -> None:
    class Name(str):
        pass

    assert payload_problem(body(node=with_(NODE, name=Name("layers_0")))) is None
    assert payload_problem(body(module=with_(MODULE, type=Name("torch.nn.Linear")))) is None


# ---------------------------------------------------------------------- accepted means reportable
FINDING = {"code": "FXS101", "severity": "error", "message": "m", "hint": "h", "file": "m.py", "line": 4,
           "column": 12, "end_line": 4, "end_column": 20, "anchor": {"file": "m.py", "line": 9},
           "scopes": [{"path": "", "type": "m.Net"}], "related": [{"file": "m.py", "line": 2, "message": "in f"}]}


def _full_body() -> dict[str, Any]:
    return {**body(), "status": "partial", "findings": [copy.deepcopy(FINDING)],
            "files": {"m.py": "abc"}, "warnings": ["w"], "torch": "2.0", "device": "meta", "output": "o",
            "analyses": {"export": {"ok": False, "headline": "failed", "counts": {"problems": 1},
                                    "details": {"strict": False}, "duration_ms": 3.5}}}


def _paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key path into ``value`` (dict keys and list indices)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, prefix + (i,))
    return out


def _replaced(value: Any, path: tuple, new: Any) -> Any:
    out = copy.deepcopy(value)
    if not path:
        return new
    parent = out
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = new
    return out


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4)


def test_a_body_is_rejected_or_reported_never_a_crash() -> None:
    """Any JSON value in any field (a cache entry edited by hand, a worker's forged result): the
    reader raises nothing but a WireError, and a body it accepts is rendered in every format
    without an error."""
    from fxscope.cli.formats import github, sarif, text
    from fxscope.engine.results import TargetResult
    from fxscope.project.discovery import Target
    from fxscope.report.build import build_report

    base = _full_body()
    paths = _paths(base)[1:]
    root = Path("/ws")
    target = Target(id="m.py::Net", kind="class", file="m.py", line=3, module="m", qualname="Net")

    @settings(max_examples=400, deadline=None, database=None)
    @given(st.sampled_from(paths), _JSON)
    def check(path: tuple, value: Any) -> None:
        changed = _replaced(base, path, value)
        try:
            outcome = TargetOutcome.from_json(changed, target=target.id)
        except WireError:
            return
        report = build_report(str(root), "2.0", [TargetResult(target, outcome)], graphs=True)
        text.render(report, root=root, show_info=True)
        sarif.render(report, root=root)
        github.render(report, root=root)

    check()


def test_unknown_missing_and_mistyped_fields_are_named() -> None:
    assert payload_problem(with_(body(), forward_order=[""])) == "result: unknown field 'forward_order'"
    assert payload_problem(with_(body(), compile={"graphs": 1})) == "result: unknown field 'compile'"
    assert payload_problem(with_(body(), status=...)) == "status None is not one of " + str(
        ["error", "failed", "partial", "skipped", "traced"])
    assert payload_problem(with_(body(), nodes="2")) == "result: 'nodes' is not a count"
    assert payload_problem(with_(body(), warnings=["w", 3])) == "result: 'warnings' is not a list of strings"
    assert payload_problem(with_(body(), files={"m.py": 1})) == "'files' is not a map of paths to hashes"
    assert payload_problem(with_(body(), findings=[{**FINDING, "code": "E501"}])) == (
        "findings[0]: code 'E501' is not a finding code")
    assert payload_problem(with_(body(), findings=[{**FINDING, "scopes": [{"path": ""}]}])) == (
        "findings[0].scopes[0]: 'type' is missing")
    assert payload_problem([]) == "result: a list, not an object"


def test_analysis_summaries_are_checked_and_read_under_their_names() -> None:
    good = body()
    good["graphs"].append({"module": "", "analysis": "compile", "nodes": [NODE],
                           "ends": {"reason": "Data-dependent branching", "file": "m.py", "line": 14}})
    good["analyses"] = {
        "compile": {"ok": False, "headline": "2 graphs, 1 break", "counts": {"graphs": 2, "breaks": 1},
                    "details": {"dynamic": "auto"}, "duration_ms": 120.5},
        "dummy": {"ok": True, "headline": "fine"},
    }
    assert payload_problem(good) is None
    outcome = TargetOutcome.from_json(good, target="t")
    assert outcome.analyses["compile"] == AnalysisSummary(False, "2 graphs, 1 break", {"graphs": 2, "breaks": 1},
                                                          {"dynamic": "auto"}, 120.5)
    assert outcome.analyses["dummy"].ok and outcome.analyses["dummy"].counts == {}
    compiled = outcome.graphs[1] if outcome.graphs is not None else None
    assert compiled is not None and compiled.analysis == "compile" and compiled.ends is not None
    assert (compiled.ends.line, compiled.ends.message) == (14, "Data-dependent branching")
    assert outcome.graphs is not None and outcome.graphs[0].analysis == "fx"
    assert TargetOutcome.from_json(outcome.to_json(), target="t") == outcome
    for bad, problem in [
        (with_(good, analyses=[]), "'analyses' is not an object"),
        (with_(good, analyses={"x": "3 graphs"}), "analyses.x: a str, not an object"),
        (with_(good, analyses={"x": {"headline": "h"}}), "analyses.x: 'ok' is missing"),
        (with_(good, analyses={"x": {"ok": 1, "headline": "h"}}), "analyses.x: 'ok' is a int"),
        (with_(good, analyses={"x": {"ok": True, "headline": "h", "counts": {"a": -1}}}),
         "analyses.x: 'counts' is not a map of names to counts"),
        (with_(good, analyses={"x": {"ok": True, "headline": "h", "details": {"a": [1]}}}),
         "analyses.x: 'details' is not a map of names to scalars"),
        (with_(good, analyses={"x": {"ok": True, "headline": "h", "duration_ms": True}}),
         "analyses.x: 'duration_ms' is not a number"),
        (with_(good, analyses={"x": {"ok": True, "headline": "h", "graphs": 2}}), "analyses.x: unknown field 'graphs'"),
    ]:
        assert payload_problem(bad) == problem
    bad_graph = copy.deepcopy(good)
    bad_graph["graphs"][1]["ends"] = {"file": "m.py", "line": 0}
    assert payload_problem(bad_graph) == "graphs[1].ends: 'line' is not a line number"
    bad_graph["graphs"][1] = {"module": "", "analysis": 7, "nodes": []}
    assert payload_problem(bad_graph) == "graphs[1]: 'analysis' is a int"


INPUTS = {"specs": {"x": {"shape": [2, 3, 8, 8], "dtype": "float32"}}, "kind": "call-site",
          "file": "tests/test_models.py", "line": 14, "text": "enc(x)"}


def test_inferred_inputs_are_read_strictly() -> None:
    good = with_(body(), inputs=INPUTS)
    assert payload_problem(good) is None
    outcome = TargetOutcome.from_json(good, target="t")
    assert outcome.inputs is not None and outcome.inputs.describe() == "inputs (2, 3, 8, 8) as in tests/test_models.py:14"
    assert TargetOutcome.from_json(outcome.to_json(), target="t") == outcome
    in_cell = TargetOutcome.from_json(with_(body(), inputs={**INPUTS, "file": "demo.ipynb", "line": 2, "cell": 3}))
    assert in_cell.inputs is not None and in_cell.inputs.provenance() == "as in demo.ipynb:cell 3:2"
    structure = {"specs": {"idx": {"shape": [2, 12], "dtype": "int64"}}, "kind": "structure", "text": "its first layer"}
    assert payload_problem(with_(body(), inputs=structure)) is None
    for bad, problem in [
        ({**INPUTS, "extra": 1}, "inputs: unknown field 'extra'"),
        ({**INPUTS, "specs": {}}, "inputs: 'specs' is empty"),
        ({**INPUTS, "specs": [["x", {"shape": [2]}]]}, "inputs: 'specs' is a list"),
        ({**INPUTS, "kind": "guess"}, "inputs: 'kind' 'guess' is not one of "
         "['call-site', 'docstring', 'readme', 'convention', 'annotation', 'structure']"),
        ({**INPUTS, "kind": ...}, "inputs: 'kind' is missing"),
        ({**INPUTS, "line": "14"}, "inputs: 'line' is not a line number"),
        ({**INPUTS, "line": 0}, "inputs: 'line' is not a line number"),
        ({**INPUTS, "text": 3}, "inputs: 'text' is a int"),
        ({**INPUTS, "cell": 0}, "inputs: 'cell' is not a positive integer"),
        ({**INPUTS, "specs": {"x": {"shape": [2, -1]}}}, "inputs.specs.x: 'shape' is not a list of sizes and names"),
        ({**INPUTS, "specs": {"x": {"shape": [2, True]}}}, "inputs.specs.x: 'shape' is not a list of sizes and names"),
        ({**INPUTS, "specs": {"x": {"shape": [2], "dtype": 5}}}, "inputs.specs.x: 'dtype' is a int"),
        ({**INPUTS, "specs": {"x": [2, 3]}}, "inputs.specs.x: a list, not an object"),
        ("inputs (2, 3)", "inputs: a str, not an object"),
    ]:
        if isinstance(bad, dict):
            bad = {k: v for k, v in bad.items() if v is not ...}
        assert payload_problem(with_(body(), inputs=bad)) == problem, bad
