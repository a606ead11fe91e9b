"""The Workspace session with a manual clock (no test sleeps through a debounce) and the real
worker pool: debounced bursts, killing stale children, exact re-runs after a helper edit, the
result store's generations, and queries answered without torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from engine_support import cli_env, new_marker, processes_with_marker, write_tree
from session_support import IDLE, ManualClock, Recorder, WorkspaceFactory

from fxscope.model import Snapshot
from fxscope.session import SessionSettings, Workspace

pytestmark = pytest.mark.requires_torch



def _started(ws: Workspace, clock: ManualClock) -> None:
    ws.start(warm=False)
    assert ws.wait_idle(IDLE)


NET = """
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            y = self.lin(x)
            return y.relu()
    """


def _with_branch(text: str, n: int) -> str:
    """``text`` whose forward starts with a branch on a traced value (an FXS101 on that line)."""
    return text.replace("        y = self.lin(x)\n",
                        f"        if x.sum() > {n}:  # edit {n}\n            x = x + 1\n        y = self.lin(x)\n")


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


# ---------------------------------------------------------------------------------------------


def test_burst_of_changes_runs_at_most_twice_and_ends_with_the_final_text(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, {"net.py": NET, "pyproject.toml": "[tool.fxscope]\nworkers = 1\n"})
    path = tmp_path / "net.py"
    with session(tmp_path, debounce_s=0.3) as ws:
        _started(ws, clock)
        assert ws.findings_for(path).findings == ()
        disk = path.read_text()
        ws.open(path, 1, disk)
        mark = rec.mark()
        text = disk
        for version in range(2, 22):  # 20 edits, 0.1 s apart: the debounce (0.3 s) never expires ...
            text = _with_branch(disk, version)
            ws.change(path, version, text)
            clock.advance(0.1)
            if version == 11:  # ... except once, half-way (a pause while typing)
                clock.advance(0.3)
        clock.advance(0.3)
        assert ws.wait_idle(IDLE)
        runs = rec.finished(mark)
        # each burst runs at most twice: its first edit at once (leading edge), its last after
        # the debounce (trailing edge); the pause splits the 20 edits into two bursts
        assert 1 <= runs.count("net.py::Net") <= 4, runs
        result = ws.findings_for(path)
        assert result.version == 21
        [finding] = result.findings
        assert (finding.code, finding.location.line) == ("FXS101", _line_of(text, "# edit 21"))
        assert finding.location.column == 12 and finding.target == "net.py::Net"
        assert rec.warnings == []


def test_an_isolated_edit_runs_at_once_and_a_burst_waits_for_the_debounce(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, {"net.py": NET, "pyproject.toml": "[tool.fxscope]\nworkers = 1\n"})
    path = tmp_path / "net.py"
    with session(tmp_path, debounce_s=0.3) as ws:
        _started(ws, clock)
        disk = path.read_text()
        ws.open(path, 1, disk)
        ws.change(path, 2, _with_branch(disk, 2))
        clock.advance(0.0)  # no debounce for an edit after a quiet period
        assert ws.wait_idle(IDLE)
        assert ws.findings_for(path).version == 2
        ws.change(path, 3, _with_branch(disk, 3))  # right after it: a burst begins
        clock.advance(0.1)
        ws.change(path, 4, _with_branch(disk, 4))
        clock.advance(0.1)
        assert ws.findings_for(path).version == 2  # coalescing on the trailing edge
        clock.advance(0.3)
        assert ws.wait_idle(IDLE)
        result = ws.findings_for(path)
        assert result.version == 4
        [finding] = result.findings
        assert finding.location.line == _line_of(_with_branch(disk, 4), "# edit 4")


SLOW = """
    import time

    from torch import nn


    class Slow(nn.Module):
        def forward(self, x):
            return x * 2
    """


def _slow_version(text: str) -> str:
    out = text.replace("        return x * 2\n", "        time.sleep(600)  # stuck\n        return x * 2\n")
    assert out != text
    return out


def _children(marker: str) -> int:
    """Live processes started by this test's workspace (the zygote and its forked children)."""
    return len(processes_with_marker(marker))


def _wait_for(predicate: Callable[[], bool], timeout: float = IDLE) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


@pytest.mark.slow
def test_an_edit_kills_the_running_child_and_a_cancelled_target_keeps_its_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    marker = new_marker()
    monkeypatch.setenv("FXSCOPE_TEST_MARKER", marker)  # inherited by the zygote and its children
    write_tree(tmp_path, {"slow.py": SLOW, "pyproject.toml": "[tool.fxscope]\nworkers = 1\ntimeout = 900\n"})
    path = tmp_path / "slow.py"
    ws = session(tmp_path, debounce_s=0.3)
    try:
        _started(ws, clock)
        before = ws.graph("slow.py::Slow")
        assert before.status == "traced" and before.graphs
        traced_line = _line_of(path.read_text(), "return x * 2")
        assert any(n.op == "call_function" for n in ws.nodes_at(path, traced_line))
        assert _wait_for(lambda: _children(marker) == 2)  # the zygote and its spare child

        stuck = _slow_version(path.read_text())
        ws.open(path, 1, path.read_text())
        ws.change(path, 2, stuck)
        clock.advance(0.3)
        # tracing, stuck: the job runs in the spare, and a new spare is forked
        assert _wait_for(lambda: ws.status().running == 1 and _children(marker) == 3)

        ws.change(path, 3, stuck.replace("# stuck", "# still stuck"))  # a newer snapshot ...
        assert _wait_for(lambda: _children(marker) == 2)  # ... killed the child at once (no debounce)
        assert _wait_for(lambda: ws.status().running == 0)  # its cancellation is delivered
        kept = ws.graph("slow.py::Slow")  # the cancelled target keeps its last result
        assert kept.status == "traced" and [n.name for _, ns in kept.graphs for n in ns] == \
            [n.name for _, ns in before.graphs for n in ns]
        # its nodes are at the line's place in the buffer (one line was inserted above it), none
        # on the inserted line
        assert any(n.op == "call_function" for n in ws.nodes_at(path, traced_line + 1))
        assert ws.nodes_at(path, traced_line) == []

        ws.change(path, 4, path.read_text().replace("x * 2", "x * 3"))
        clock.advance(0.3)
        assert ws.wait_idle(IDLE)
        assert ws.findings_for(path).version == 4 and ws.graph("slow.py::Slow").status == "traced"
    finally:
        ws.close()
    assert _wait_for(lambda: _children(marker) == 0, 30), processes_with_marker(marker)


HELPER_WS = {
    "helper.py": """
        def double(x):
            return x * 2
        """,
    "a.py": """
        from torch import nn

        from helper import double


        class A(nn.Module):
            def forward(self, x):
                return double(x)
        """,
    "b.py": """
        from torch import nn

        import helper


        class B(nn.Module):
            def forward(self, x):
                return helper.double(x) + 1
        """,
    "c.py": """
        from torch import nn


        class C(nn.Module):
            def forward(self, x):
                return x - 1
        """,
    "pyproject.toml": "[tool.fxscope]\nworkers = 1\n",
}


def test_a_helper_edit_reruns_exactly_its_importers(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, HELPER_WS)
    with session(tmp_path) as ws:
        _started(ws, clock)
        assert sorted(set(rec.finished())) == ["a.py::A", "b.py::B", "c.py::C"]
        helper = tmp_path / "helper.py"
        mark = rec.mark()
        events = len(rec.results)
        ws.change(helper, 1, "def double(x):\n    if x.sum() > 0:\n        return x\n    return x * 2\n")
        clock.advance(0.3)
        assert ws.wait_idle(IDLE)
        assert sorted(rec.finished(mark)) == ["a.py::A", "b.py::B"]
        [finding] = ws.findings_for(helper).findings
        assert (finding.code, finding.location.line) == ("FXS101", 2)
        assert set(finding.all_targets()) == {"a.py::A", "b.py::B"}  # one finding, every target
        assert {p.name for ev in rec.results[events:] for p in ev.files} == {"helper.py"}
        assert ws.files_with_findings() == [helper]

        mark = rec.mark()  # closing the unsaved buffer: the disk text counts again
        ws.close(helper)
        clock.advance(0.3)
        assert ws.wait_idle(IDLE)
        assert sorted(rec.finished(mark)) == ["a.py::A", "b.py::B"]
        assert ws.findings_for(helper).findings == () and ws.files_with_findings() == []


def test_a_result_of_an_older_snapshot_never_replaces_a_newer_one(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, {"net.py": NET})
    path = tmp_path / "net.py"
    with session(tmp_path) as ws:
        _started(ws, clock)
        [target] = ws.engine.discover().targets
        newer_text = _with_branch(path.read_text(), 7)
        newer = Snapshot.of({str(path): newer_text}, {str(path): 9}, generation=50)
        older = Snapshot.of({str(path): path.read_text()}, {str(path): 8}, generation=40)
        [new_result] = ws.engine.run([target], overlays=newer)
        [old_result] = ws.engine.run([target], overlays=older)
        assert ws.deliver(new_result, newer) is True
        assert ws.deliver(old_result, older) is False  # late: computed for an older snapshot
        [finding] = ws.findings_for(path).findings
        assert finding.location.line == _line_of(newer_text, "# edit 7")


def test_settings_switch_off_and_back_on(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, HELPER_WS)
    with session(tmp_path, enabled=False) as ws:
        ws.start(warm=False)
        assert ws.wait_idle(IDLE) and rec.finished() == []  # disabled: nothing runs
        ws.update_settings(SessionSettings(enabled=True))
        clock.advance(0.0)
        assert ws.wait_idle(IDLE)
        assert sorted(set(rec.finished())) == ["a.py::A", "b.py::B", "c.py::C"]
        status = ws.status()
        assert (status.total, status.done, status.running, status.queued) == (3, 3, 0, 0)
        assert ws.target_for_class(tmp_path / "a.py", 8) == "a.py::A"
        [summary] = ws.classes_in(tmp_path / "a.py")
        assert (summary.qualname, summary.status, summary.targets) == ("A", "traced", ("a.py::A",))


def test_pyproject_change_reloads_and_keeps_the_warm_pool(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, {**HELPER_WS, "pyproject.toml": "[tool.fxscope]\nworkers = 1\ntimeout = 30\n"})
    with session(tmp_path) as ws:
        _started(ws, clock)
        pool = ws.engine.pool
        (tmp_path / "pyproject.toml").write_text("[tool.fxscope]\nworkers = 1\ntimeout = 31\n")
        mark = rec.mark()
        ws.files_changed([tmp_path / "pyproject.toml"])
        clock.advance(0.0)
        assert ws.wait_idle(IDLE)
        assert ws.config.timeout == 31 and ws.engine.pool is pool  # unrelated key: same warm pool
        assert sorted(rec.finished(mark)) == ["a.py::A", "b.py::B", "c.py::C"]  # new config context
        (tmp_path / "pyproject.toml").write_text("[tool.fxscope]\ntimout = 3\n")
        ws.files_changed([tmp_path / "pyproject.toml"])
        status = ws.status()
        assert status.config_error is not None and "timout" in status.config_error
        assert ws.config.timeout == 31  # the previous configuration stays in use
        assert any("timout" in w for w in rec.warnings)


def test_new_and_deleted_files_update_discovery_incrementally(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, HELPER_WS)
    with session(tmp_path) as ws:
        _started(ws, clock)
        write_tree(tmp_path, {"d.py": "from torch import nn\n\n\nclass D(nn.Module):\n"
                                      "    def forward(self, x):\n        return len(x)\n"})
        (tmp_path / "c.py").unlink()
        mark = rec.mark()
        ws.files_changed([tmp_path / "d.py", tmp_path / "c.py"])
        clock.advance(0.3)
        assert ws.wait_idle(IDLE)
        assert rec.finished(mark) == ["d.py::D"]
        assert ws.status().total == 3 and ws.graph("a.py::A").status == "traced"
        with pytest.raises(KeyError):
            ws.graph("c.py::C")
        [finding] = ws.findings_for(tmp_path / "d.py").findings
        assert finding.code == "FXS103"


HOVER_SCRIPT = r"""
import json, sys
from pathlib import Path
from fxscope.session import Workspace
root = Path(sys.argv[1])
with Workspace(root) as ws:
    ws.start(warm=sys.argv[2] == "trace")
    assert ws.wait_idle(300)
    nodes = ws.nodes_at(root / "net.py", int(sys.argv[3]))
    classes = ws.classes_in(root / "net.py")
    started = ws.engine._pool is not None
print(json.dumps({"torch": "torch" in sys.modules, "pool": started,
                  "nodes": [n.to_json() for n in nodes], "classes": [c.to_json() for c in classes]}))
"""


def test_hover_nodes_come_from_memory_and_the_cache_without_torch(tmp_path: Path) -> None:
    write_tree(tmp_path, {"net.py": NET})
    line = _line_of((tmp_path / "net.py").read_text(), "y = self.lin(x)")

    def query(mode: str) -> dict:
        proc = subprocess.run([sys.executable, "-c", HOVER_SCRIPT, str(tmp_path), mode, str(line)],
                              env=cli_env(), capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(proc.stdout)

    for mode in ("trace", "cached"):  # traced by the workers, then answered from the JSON cache
        out = query(mode)
        assert out["torch"] is False
        assert out["pool"] is (mode == "trace")
        [node] = out["nodes"]  # the leaf call, in the scope of the instance it calls
        assert (node["op"], node["target"], node["scope"], node["line"]) == ("call_module", "lin", "lin", line)
        assert node["scope_type"] == "torch.nn.modules.linear.Linear" and node["target_id"] == "net.py::Net"
        [summary] = out["classes"]
        assert (summary["qualname"], summary["status"], summary["leaf_children"]) == ("Net", "traced", ["lin"])
        assert summary["nodes"] == 4 and summary["type_name"] == "net.Net" and summary["instances"] == [""]


def test_suppression_is_read_from_the_buffer(
        tmp_path: Path, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    write_tree(tmp_path, {"net.py": NET})
    path = tmp_path / "net.py"
    path.write_text(_with_branch(path.read_text(), 1))
    with session(tmp_path) as ws:
        _started(ws, clock)
        [finding] = ws.findings_for(path).findings
        before = ws.findings_for(path).result_id
        text = path.read_text()
        quiet = text.replace("# edit 1", "# fxscope: ignore[FXS101]")
        ws.open(path, 1, quiet)  # only the comment changed on that line: the suppression applies
        found = ws.findings_for(path)
        assert ws.findings_for(path).findings == () and found.result_id != before
        assert os.path.exists(path) and "ignore" not in path.read_text()


def test_cancel_interrupts_a_check_and_keeps_the_previous_result(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: ManualClock, rec: Recorder,
        session: WorkspaceFactory) -> None:
    from fxscope.errors import CheckInterrupted

    marker = new_marker()
    monkeypatch.setenv("FXSCOPE_TEST_MARKER", marker)
    write_tree(tmp_path, {"slow.py": SLOW, "pyproject.toml": "[tool.fxscope]\nworkers = 1\ntimeout = 900\n"})
    path = tmp_path / "slow.py"
    with session(tmp_path) as ws:
        first = ws.check()
        assert [t.status for t in first.targets] == ["traced"]
        path.write_text(_slow_version(path.read_text()))
        outcome: list[object] = []
        runner = threading.Thread(target=lambda: outcome.append(_catch(ws.check)))
        runner.start()
        # the stuck trace runs (and a new spare): the round has started, so cancel interrupts it
        assert _wait_for(lambda: ws.status().running == 1 and _children(marker) == 3)
        ws.cancel()
        runner.join(IDLE)
        [error] = outcome
        assert isinstance(error, CheckInterrupted), error  # never a shorter report
        assert _wait_for(lambda: _children(marker) == 2)  # the zygote and its spare
        assert ws.graph("slow.py::Slow").status == "traced"  # the previous result is kept


def _catch(fn: Callable[[], object]) -> object:
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return exc


TIERS_WS = {
    "layers.py": """
        from torch import nn


        class L(nn.Module):
            def forward(self, x):
                return x + 1
        """,
    "model.py": """
        from torch import nn

        from layers import L


        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.l = L()

            def forward(self, x):
                return self.l(x)
        """,
    "other.py": """
        from torch import nn


        class O(nn.Module):
            def forward(self, x):
                return x * 2
        """,
}


def test_the_order_open_files_then_their_imports_then_the_rest_and_an_edit_first(
        tmp_path: Path, clock: ManualClock, rec: Recorder, session: WorkspaceFactory) -> None:
    write_tree(tmp_path, TIERS_WS)
    with session(tmp_path) as ws:
        _started(ws, clock)
        ids = ("model.py::M", "layers.py::L", "other.py::O")
        assert [ws.scheduler.priority(t) for t in ids] == [2, 2, 2]  # nothing open: all background
        model = tmp_path / "model.py"
        ws.open(model, 1, model.read_text())
        assert [ws.scheduler.priority(t) for t in ids] == [0, 1, 2]  # open, imported by it, the rest
        ws.close(model)
        assert ws.wait_idle(IDLE)
        assert [ws.scheduler.priority(t) for t in ids] == [2, 2, 2]
        clock.advance(1.0)
        layers = tmp_path / "layers.py"  # an edit of a module others import: its own target first,
        ws.change(layers, 1, layers.read_text() + "\n# edited\n")  # its importers by their tier
        assert ws.scheduler.priority("layers.py::L") == 0 and ws.scheduler.priority("model.py::M") == 2
        clock.advance(0.0)
        assert ws.wait_idle(IDLE)
        assert {"layers.py::L", "model.py::M"} <= set(rec.finished())
        summaries = [ev.summary for ev in rec.progress if ev.summary is not None]
        assert summaries and summaries[-1].targets == 2  # the edit's run: L and its importer M
