"""The result store on its own, fed hand-made typed outcomes: per-file findings (merged across
targets, suppressed from the buffer, versioned), nodes per line, classes per file, statuses,
graphs, covered skips, forgetting. No engine, no worker, no torch."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine_support import DAEMON

from fxscope.engine.results import TargetResult
from fxscope.model import Snapshot, TargetOutcome
from fxscope.project.discovery import FileError, Target
from fxscope.session.store import ResultStore

MODELS = '''\
from torch import nn


class Block(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        return x.relu()


class Net(nn.Module):
    def forward(self, x):
        return self.block(x)
'''


def _target(name: str, line: int, *, kind: str = "class", file: str = "models.py") -> Target:
    tid = f"{file}::{name}" if kind == "class" else name
    return Target(id=tid, kind=kind, file=file, line=line, module="models", qualname=name)


def _node(name: str, op: str, target: str, scope: str, scope_type: str, line: int | None = None,
          inputs: tuple[str, ...] = ()) -> dict:
    node = {"name": name, "op": op, "target": target, "scope": scope, "scope_type": scope_type,
            "inputs": list(inputs)}
    if line is not None:
        node.update(file="models.py", line=line)
    return node


def _branch(line: int = 6, scope: str = "") -> dict:
    return {"code": "FXS101", "severity": "error", "message": "a traced value decides control flow",
            "file": "models.py", "line": line, "column": 12, "end_column": 23,
            "scopes": [{"path": scope, "type": "models.Block"}]}


def _result(target: Target, status: str, *, findings: tuple[dict, ...] = (), modules: tuple[dict, ...] = (),
            nodes: tuple[dict, ...] = (), files: dict[str, str] | None = None) -> TargetResult:
    body = {"status": status, "nodes": len(nodes), "findings": list(findings), "modules": list(modules),
            "graphs": [{"module": "", "nodes": list(nodes)}] if nodes else [],
            "files": files if files is not None else {target.file: "h"}}
    return TargetResult(target, TargetOutcome.from_json(body, target=target.id))


BLOCK = _target("Block", 4)
NET = _target("Net", 11)
BLOCK_MODULE = {"path": "", "type": "models.Block", "status": "failed", "params": 0, "file": "models.py", "line": 4}
NET_MODULES = ({"path": "", "type": "models.Net", "status": "traced", "params": 0,
                "file": "models.py", "line": 11},
               {"path": "block", "type": "models.Block", "status": "failed", "params": 0, "file": "models.py",
                "line": 4},
               {"path": "block.act", "type": "torch.nn.ReLU", "status": "leaf", "params": 0})
NET_NODES = (_node("x", "placeholder", "x", "", "models.Net"),
             _node("block", "call_module", "block", "block", "models.Block", 12, ("x",)),
             _node("output", "output", "output", "", "models.Net", None, ("block",)))


def _store(tmp_path: Path) -> ResultStore:
    (tmp_path / "models.py").write_text(MODELS)
    return ResultStore(tmp_path)


def _snapshot(tmp_path: Path, generation: int, text: str | None = None, version: int | None = None) -> Snapshot:
    key = str(tmp_path / "models.py")
    return Snapshot.of({key: text} if text is not None else {}, {key: version} if version is not None else {},
                       generation=generation)


def _deliver(store: ResultStore, result: TargetResult, generation: int,
             versions: dict[str, int | None] | None = None) -> set[str] | None:
    deps = frozenset(result.outcome.files) | {result.target.file}
    return store.deliver(result, generation, deps, versions or {})


def test_findings_of_a_file_are_merged_across_targets(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _deliver(store, _result(BLOCK, "failed", findings=(_branch(),), modules=(BLOCK_MODULE,)), 1) == {"models.py"}
    assert _deliver(store, _result(NET, "partial", findings=(_branch(scope="block"),), modules=NET_MODULES,
                                   nodes=NET_NODES), 1) == {"models.py"}
    found = store.findings_for("models.py", str(tmp_path / "models.py"), _snapshot(tmp_path, 1))
    [finding] = found.findings  # one problem, two targets
    assert finding.all_targets() == ("models.py::Block", "models.py::Net")
    assert [(s.path, s.target) for s in finding.scopes] == [("", "models.py::Block"), ("block", "models.py::Net")]
    assert finding.hint  # the code's help, added when the tracer gave none
    assert store.files_with_findings() == ["models.py"]


def test_an_older_result_never_replaces_a_newer_one(tmp_path: Path) -> None:
    store = _store(tmp_path)
    assert _deliver(store, _result(BLOCK, "failed", findings=(_branch(6),)), 5) is not None
    assert _deliver(store, _result(BLOCK, "traced"), 4) is None
    assert store.stored_generation(BLOCK.id) == 5 and store.status(BLOCK.id) == "failed"
    assert _deliver(store, _result(BLOCK, "traced"), 6) == {"models.py"}  # its finding is gone
    assert store.findings_for("models.py", str(tmp_path / "models.py"), _snapshot(tmp_path, 6)).findings == ()


def test_suppression_and_version_come_from_the_snapshot(tmp_path: Path) -> None:
    store = _store(tmp_path)
    key = str(tmp_path / "models.py")
    _deliver(store, _result(BLOCK, "failed", findings=(_branch(),)), 3, versions={"models.py": 7})
    shown = store.findings_for("models.py", key, _snapshot(tmp_path, 3, MODELS, 7))
    assert (len(shown.findings), shown.version, shown.generation) == (1, 7, 3)
    quiet = MODELS.replace("if x.sum() > 0:", "if x.sum() > 0:  # fxscope: ignore[FXS101]")
    hidden = store.findings_for("models.py", key, _snapshot(tmp_path, 4, quiet, 8))
    assert hidden.findings == () and hidden.result_id != shown.result_id
    assert hidden.version == 7  # the version the findings were computed for, not the buffer's


def test_a_new_document_version_alone_is_announced(tmp_path: Path) -> None:
    store = _store(tmp_path)
    result = _result(BLOCK, "failed", findings=(_branch(),))
    assert _deliver(store, result, 1, versions={"models.py": 1}) == {"models.py"}
    assert _deliver(store, result, 2, versions={"models.py": 1}) == set()  # nothing changed
    assert _deliver(store, result, 3, versions={"models.py": 2}) == {"models.py"}  # same findings, newer version


def test_nodes_of_a_line_over_every_target(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _deliver(store, _result(NET, "partial", modules=NET_MODULES, nodes=NET_NODES), 1)
    [node] = store.nodes_at("models.py", 12)
    assert (node.name, node.op, node.target_id, node.graph, node.inputs) == ("block", "call_module", NET.id, "",
                                                                              ("x",))
    assert store.nodes_at("models.py", 13) == []
    _deliver(store, _result(NET, "traced"), 2)  # no graph any more
    assert store.nodes_at("models.py", 12) == []


def test_classes_of_a_file_from_own_targets_and_instances(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _deliver(store, _result(BLOCK, "failed", findings=(_branch(),), modules=(BLOCK_MODULE,)), 1)
    _deliver(store, _result(NET, "traced", modules=NET_MODULES, nodes=NET_NODES), 1)
    block, net = store.classes_in("models.py", [BLOCK, NET], lambda tid: False)
    assert (block.qualname, block.status, block.targets, block.instances) == (
        "Block", "failed", (BLOCK.id, NET.id), ("", "block"))
    assert block.findings == 1 and block.reason == "a traced value decides control flow"
    assert block.leaf_children == ("block.act",)
    assert (net.qualname, net.status, net.nodes, net.findings) == ("Net", "traced", 3, 0)
    pending = store.classes_in("models.py", [BLOCK, NET], lambda tid: tid == NET.id)
    assert [s.status for s in pending] == ["failed", "pending"]
    # a class that only appears inside traced models, with no target of its own
    [only] = store.classes_in("models.py", [NET], lambda tid: False)[:1]
    assert (only.qualname, only.status, only.targets) == ("Block", "failed", (BLOCK.id, NET.id))


def test_graph_view_and_document(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _deliver(store, _result(NET, "traced", modules=NET_MODULES, nodes=NET_NODES), 1)
    view = store.graph(NET.id, None, pending=False)
    assert view.status == "traced" and [n.name for _, nodes in view.graphs for n in nodes] == ["x", "block", "output"]
    assert view.edges == (("", "x", "block"), ("", "block", "output"))
    assert store.graph(NET.id, None, pending=True).status == "pending"
    assert store.graph("never.py::Traced", None, pending=False).status == "pending"
    doc = store.graph_document(NET.id, "block", pending=False)
    assert doc["module"] == "block" and [n["name"] for g in doc["graphs"] for n in g["nodes"]] == ["block"]


def test_graphs_torch_compile_captured_are_drawn_but_not_hovered(tmp_path: Path) -> None:
    """The compile analysis's graphs join the target's graphs: the graph document draws them (with
    the break that ended each), hovers and the text view keep fxscope's own FX nodes."""
    store = _store(tmp_path)
    result = _result(NET, "traced", modules=NET_MODULES, nodes=NET_NODES)
    body = result.outcome.to_json()
    body["graphs"].append({"module": "", "analysis": "compile", "ends": {"reason": "Data-dependent branching",
                                                                           "file": "models.py", "line": 6},
                           "nodes": [_node("l_x_", "placeholder", "L_x_", "", "", 12),
                                     _node("sum_1", "call_method", "sum", "", "", 6, ("l_x_",))]})
    _deliver(store, TargetResult(NET, TargetOutcome.from_json(body, target=NET.id)), 1)
    assert [n.name for n in store.nodes_at("models.py", 12)] == ["block"]
    assert store.nodes_at("models.py", 6) == []
    view = store.graph(NET.id, None, pending=False)
    assert [n.name for _, nodes in view.graphs for n in nodes] == ["x", "block", "output"]
    doc = store.graph_document(NET.id, None, pending=False)
    assert [g.get("analysis") for g in doc["graphs"]] == [None, "compile"]
    assert doc["graphs"][1]["ends"] == {"reason": "Data-dependent branching", "file": "models.py", "line": 6}


def test_a_skip_covered_by_a_factory_is_not_shown(tmp_path: Path) -> None:
    store = _store(tmp_path)
    needs = _target("Block", 4)
    skipped = {"code": "FXS405", "severity": "info", "message": "`Block` needs constructor arguments",
               "file": "models.py", "line": 4}
    _deliver(store, _result(needs, "skipped", findings=(skipped,)), 1)
    key = str(tmp_path / "models.py")
    assert [f.code for f in store.findings_for("models.py", key, _snapshot(tmp_path, 1)).findings] == ["FXS405"]
    factory = _target("block-factory", 0, kind="factory")
    built = ({"path": "", "type": "models.Block", "status": "traced", "params": 0},)
    _deliver(store, _result(factory, "traced", modules=built), 2)
    assert store.findings_for("models.py", key, _snapshot(tmp_path, 2)).findings == ()
    store.forget({factory.id})
    assert [f.code for f in store.findings_for("models.py", key, _snapshot(tmp_path, 3)).findings] == ["FXS405"]


def test_forget_and_file_errors(tmp_path: Path) -> None:
    store = _store(tmp_path)
    _deliver(store, _result(BLOCK, "failed", findings=(_branch(),)), 1)
    assert store.dependents("models.py") == {BLOCK.id}
    assert store.forget({BLOCK.id, "unknown"}) == {"models.py"}
    assert store.results() == [] and store.dependents("models.py") == set() and store.status(BLOCK.id) is None
    assert store.set_file_errors([FileError("broken.py", 3, 5, "invalid syntax")]) == {"broken.py"}
    assert store.set_file_errors([FileError("broken.py", 3, 5, "invalid syntax")]) == set()
    [error] = store.findings_for("broken.py", str(tmp_path / "broken.py"), _snapshot(tmp_path, 1)).findings
    assert (error.code, error.location.line, error.location.column, error.target) == ("FXS402", 3, 5, "broken.py")
    assert store.files_with_findings() == ["broken.py"]
    assert store.set_file_errors([]) == {"broken.py"}


def test_the_session_core_does_not_import_torch() -> None:
    code = ("import sys; import fxscope.session.scheduler, fxscope.session.store, fxscope.session.workspace\n"
            "assert 'torch' not in sys.modules, sorted(m for m in sys.modules if m.startswith('torch'))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(DAEMON), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
