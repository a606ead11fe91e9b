"""The workspace engine through the real CLI (`python -m fxscope check . --format json`): target
discovery, finding locations, incremental re-tracing, cache recovery, concurrency, the report
schema and torch-free cached checks. Faults (crashes, hangs, ...) are in test_engine_faults.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine_support import (
    SCHEMA, cli_env, finish_check, locate, new_marker, processes_with_marker, run_check,
    start_check, write_tree,
)

pytestmark = pytest.mark.requires_torch

PYPROJECT = """
[tool.fxscope]
timeout = 60

[tool.fxscope.targets.flagged]
factory = "pkg.factories:build_flagged"
concrete-args = { use_bias = true }

[tool.fxscope.targets.paired]
factory = "pkg.factories:build_paired"
"""

WORKSPACE = {
    "pyproject.toml": PYPROJECT,
    "pkg/__init__.py": "",
    "pkg/helpers.py": """
        import torch


        def scale(x):
            return x * 2
        """,
    "pkg/models.py": """
        import torch
        from torch import nn


        class Clean(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return torch.relu(self.fc(x))


        class IfModel(nn.Module):
            def forward(self, x):
                if x.sum() > 0:  # MARK if
                    return x
                return -x


        class LenModel(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                y = self.fc(x)
                return y / len(y)  # MARK len


        class IntModel(nn.Module):
            def forward(self, x):
                steps = int(x.shape[0])  # MARK int
                return x + steps


        class NeedsArgs(nn.Module):  # MARK needs-args
            def __init__(self, knob, depth=2):  # `knob` says nothing: fxscope cannot guess a value
                super().__init__()
                self.fc = nn.Linear(*knob)  # a pair: no int is guessed for it

            def forward(self, x):
                return self.fc(x)
        """,
    "pkg/users.py": """
        from torch import nn

        from pkg.helpers import scale


        class UsesHelper(nn.Module):
            def forward(self, x):
                return scale(x) + 1
        """,
    "pkg/factories.py": """
        from torch import nn


        class Flagged(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.fc = nn.Linear(dim, dim)

            def forward(self, x, use_bias):
                if use_bias:
                    return self.fc(x) + 1
                return self.fc(x)


        class Paired(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.fc = nn.Linear(dim, dim)

            def forward(self, x, mode):
                if mode == "double":
                    return self.fc(x) * 2
                return self.fc(x)


        def build_flagged():
            return Flagged(4)


        def build_paired():
            return Paired(4), {"mode": "double"}
        """,
    "standalone.py": """
        from torch import nn


        class Standalone(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(3, 3)

            def forward(self, x):
                return self.fc(x).relu()
        """,
}

CLASS_TARGETS = {
    "pkg/models.py::Clean", "pkg/models.py::IfModel", "pkg/models.py::LenModel",
    "pkg/models.py::IntModel", "pkg/models.py::NeedsArgs", "pkg/users.py::UsesHelper",
    "standalone.py::Standalone", "pkg/factories.py::Flagged", "pkg/factories.py::Paired",
}
ALL_TARGETS = CLASS_TARGETS | {"flagged", "paired"}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory):
    """The workspace after one cold check (its cache filled), and that first run."""
    root = tmp_path_factory.mktemp("engine") / "ws"
    write_tree(root, WORKSPACE)
    first = run_check(root)
    return root, first


def copy_ws(base_root: Path, dest: Path, *, with_cache: bool = True) -> Path:
    """A copy of the workspace (with its cache, or without), somewhere else on disk."""
    ignore = None if with_cache else shutil.ignore_patterns(".fxscope_cache")
    shutil.copytree(base_root, dest, ignore=ignore)
    return dest


# ---------------------------------------------------------------------------------------------
# targets and findings


def test_targets_discovered(base):
    root, run = base
    targets = run.targets
    assert set(targets) == ALL_TARGETS
    assert all(not t["cached"] for t in targets.values())  # a cold check traced everything
    assert targets["pkg/models.py::Clean"]["status"] == "traced"
    assert targets["pkg/models.py::Clean"]["kind"] == "class"
    assert targets["standalone.py::Standalone"]["status"] == "traced"
    # classes needing constructor arguments: skipped, with an FXS405 info at the class line
    line, _ = locate(root, "pkg/models.py", "MARK needs-args")
    needs = targets["pkg/models.py::NeedsArgs"]
    assert needs["status"] == "skipped" and needs["line"] == line
    [info] = run.findings("pkg/models.py::NeedsArgs", "FXS405")
    assert (info["severity"], info["file"], info["line"]) == ("info", "pkg/models.py", line)
    assert "knob" in info["message"] and "depth" not in info["message"]
    assert targets["pkg/factories.py::Flagged"]["status"] == "skipped"


def test_factory_targets(base):
    root, run = base
    flagged, paired = run.targets["flagged"], run.targets["paired"]
    assert flagged["kind"] == paired["kind"] == "factory"
    # concrete-args from the config decide `if use_bias:`; the tuple's dict decides `if mode == ...`
    assert flagged["status"] == "traced", run.findings("flagged")
    assert paired["status"] == "traced", run.findings("paired")
    assert not run.findings("flagged") and not run.findings("paired")
    assert flagged["file"] == paired["file"] == "pkg/factories.py"
    assert flagged["line"] == locate(root, "pkg/factories.py", "def build_flagged")[0]
    assert {m["path"] for m in flagged["modules"]} == {"", "fc"}
    assert flagged["nodes"] > 0


@pytest.mark.parametrize("target, code, marker, text", [
    ("pkg/models.py::IfModel", "FXS101", "MARK if", "x.sum() > 0"),
    ("pkg/models.py::LenModel", "FXS103", "MARK len", "len(y)"),
    ("pkg/models.py::IntModel", "FXS104", "MARK int", "int(x.shape[0])"),
])
def test_findings_at_the_right_lines(base, target, code, marker, text):
    root, run = base
    line, column = locate(root, "pkg/models.py", marker, text)
    [finding] = run.findings(target, code)
    assert finding["severity"] == "error"
    assert (finding["file"], finding["line"], finding["column"]) == ("pkg/models.py", line, column)
    assert finding["end_column"] == column + len(text)
    assert run.targets[target]["status"] == "failed"
    assert finding.get("hint")


def test_report_matches_schema(base):
    jsonschema = pytest.importorskip("jsonschema")
    root, run = base
    schema = json.loads(SCHEMA.read_text())
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(run.report), key=lambda e: list(e.path))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]
    assert run.report["root"] == str(root.resolve())
    # with --graphs too (a cached check)
    graphs = run_check(root, "--graphs")
    assert any("graphs" in t for t in graphs.report["targets"])
    errors = list(validator.iter_errors(graphs.report))
    assert not errors, [f"{list(e.path)}: {e.message}" for e in errors[:5]]


def test_warnings_go_to_stderr_only(base):
    root, run = base
    assert run.stdout.lstrip().startswith("{")
    json.loads(run.stdout)  # nothing but the report on stdout


# ---------------------------------------------------------------------------------------------
# cache and incremental checks


def test_second_check_is_fully_cached_and_torch_free(base):
    root, first = base
    # run main() in a wrapper that reports whether torch was imported
    code = textwrap.dedent("""
        import io, json, sys, contextlib
        from fxscope.cli.main import main
        sys.argv = ["fxscope", "check", ".", "--format", "json"]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            rc = main()
        report = json.loads(out.getvalue())
        print(json.dumps({"rc": rc, "torch": "torch" in sys.modules, "report": report}))
    """)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, env=cli_env(), capture_output=True,
                          text=True, timeout=60)
    elapsed = time.perf_counter() - start
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["torch"] is False
    report = result["report"]
    assert all(t["cached"] for t in report["targets"]), [t["id"] for t in report["targets"]
                                                        if not t["cached"]]
    assert report["summary"]["cached"] == len(ALL_TARGETS)
    # the same answer as the cold check
    def strip(r):
        return [{k: v for k, v in t.items() if k not in ("cached", "duration_ms")} for t in r["targets"]]

    assert strip(report) == strip(first.report)
    assert report["findings"] == first.report["findings"]
    assert elapsed < 5  # generous: the 0.5 s budget is measured by benchmarks/check_scaling.py


def test_moved_workspace_stays_cached_with_relative_paths(base, tmp_path):
    root, first = base
    moved = copy_ws(root, tmp_path / "elsewhere")
    run = run_check(moved)
    assert run.uncached() == set()
    assert run.report["root"] == str(moved.resolve())
    assert run.report["findings"] == first.report["findings"]
    for t in run.report["targets"]:
        for m in t["modules"]:
            assert not m.get("file", "").startswith(str(root)), m


def test_editing_a_file_retraces_only_its_dependents(base, tmp_path):
    root, _ = base
    ws = copy_ws(root, tmp_path / "ws")
    assert run_check(ws).uncached() == set()

    # helpers.py: imported by users.py only (models.py does not import it)
    with open(ws / "pkg/helpers.py", "a") as fh:
        fh.write("# a comment\n")
    run = run_check(ws)
    assert run.uncached() == {"pkg/users.py::UsesHelper"}

    # standalone.py: a line changed, its one target re-traced, nothing else
    path = ws / "standalone.py"
    path.write_text(path.read_text().replace("nn.Linear(3, 3)", "nn.Linear(3, 5)"))
    run = run_check(ws)
    assert run.uncached() == {"standalone.py::Standalone"}
    assert run.targets["standalone.py::Standalone"]["status"] == "traced"

    # factories.py: the two factory targets and the two (skipped) classes defined there
    with open(ws / "pkg/factories.py", "a") as fh:
        fh.write("\n# another comment\n")
    run = run_check(ws)
    assert run.uncached() == {"flagged", "paired", "pkg/factories.py::Flagged",
                              "pkg/factories.py::Paired"}

    # models.py: a same-size edit keeping the mtime (as within one second of a save): neither a
    # recorded file signature nor stale bytecode may hide it; IfModel now traces. A signature
    # this recent (here: in the future) is never trusted, as git's rule for racy files says.
    path = ws / "pkg/models.py"
    text = path.read_text()
    edited = text.replace("        if x.sum() > 0:  # MARK if", "        if 1 > 0:        # MARK if")
    assert len(edited) == len(text) and edited != text
    stamp = time.time_ns() + 60 * 10**9
    os.utime(path, ns=(stamp, stamp))
    assert run_check(ws).uncached() == set()  # same content: still cached
    path.write_text(edited)
    os.utime(path, ns=(stamp, stamp))
    run = run_check(ws)
    assert run.uncached() == {t for t in ALL_TARGETS if t.startswith("pkg/models.py::")}
    assert run.targets["pkg/models.py::IfModel"]["status"] == "traced"
    assert not run.findings("pkg/models.py::IfModel")

    # pkg/__init__.py runs before every module of the package
    (ws / "pkg/__init__.py").write_text("# package\n")
    run = run_check(ws)
    assert run.uncached() == {t for t in ALL_TARGETS if t.startswith(("pkg/", "flagged", "paired"))}

    assert run_check(ws).uncached() == set()


def test_a_missing_module_appearing_invalidates_the_import_error(tmp_path):
    write_tree(tmp_path, {
        "net.py": """
            from torch import nn
            import extra_layers  # MARK import


            class Net(nn.Module):
                def forward(self, x):
                    return extra_layers.double(x)
            """,
    })
    run = run_check(tmp_path)
    [finding] = run.findings("net.py::Net", "FXS402")
    assert finding["line"] == locate(tmp_path, "net.py", "MARK import")[0]
    assert run_check(tmp_path).uncached() == set()
    write_tree(tmp_path, {"extra_layers.py": "def double(x):\n    return x * 2\n"})
    run = run_check(tmp_path)
    assert run.uncached() == {"net.py::Net"}
    assert run.targets["net.py::Net"]["status"] == "traced"


def test_corrupt_cache_is_recovered(base, tmp_path):
    root, first = base
    for how in ("truncate", "garbage"):
        ws = copy_ws(root, tmp_path / how)
        db = ws / ".fxscope_cache" / "results.sqlite3"
        assert db.is_file()
        if how == "truncate":
            os.truncate(db, db.stat().st_size // 2)
        else:
            db.write_bytes(b"this is not a database\0" * 200)
        run = run_check(ws)
        assert "corrupt" in run.stderr and "warning" in run.stderr, run.stderr
        assert run.report["findings"] == first.report["findings"]
        assert {t["id"]: t["status"] for t in run.report["targets"]} == \
            {t["id"]: t["status"] for t in first.report["targets"]}
        assert run_check(ws).uncached() == set()


def test_concurrent_checks_share_one_cache(base, tmp_path):
    root, first = base
    ws = copy_ws(root, tmp_path / "ws", with_cache=False)
    procs = [start_check(ws) for _ in range(3)]
    runs = [finish_check(p) for p in procs]
    for run in runs:
        assert run.report["findings"] == first.report["findings"]
        assert {t["id"] for t in run.report["targets"]} == ALL_TARGETS
        assert "unavailable" not in run.stderr and "corrupt" not in run.stderr, run.stderr
    later = run_check(ws)
    assert later.uncached() == set()
    assert later.report["findings"] == first.report["findings"]


def test_no_process_outlives_the_cli(base, tmp_path):
    root, _ = base
    ws = copy_ws(root, tmp_path / "ws", with_cache=False)
    marker = new_marker()
    run = run_check(ws, marker=marker)  # cold: starts the worker and its children
    assert run.uncached() == ALL_TARGETS
    deadline = time.monotonic() + 5
    while processes_with_marker(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert processes_with_marker(marker) == []


# ---------------------------------------------------------------------------------------------
# the Engine API with unsaved buffers


def test_overlay_is_traced_and_does_not_poison_the_cache(tmp_path):
    from fxscope.engine import Engine
    from fxscope.report.build import check_report

    write_tree(tmp_path, {
        "m.py": """
            from torch import nn


            class M(nn.Module):
                def forward(self, x):
                    return x + 1
            """,
    })
    path = tmp_path / "m.py"
    on_disk = path.read_text()
    buffer = on_disk.replace("        return x + 1\n",
                             "        if x.sum() > 0:\n            return x\n        return x + 1\n")
    warnings: list[str] = []
    with Engine(tmp_path, on_warning=warnings.append) as engine:
        disk = check_report(engine.check()).to_json()
        assert [(t["status"], t["cached"]) for t in disk["targets"]] == [("traced", False)]

        unsaved = check_report(engine.check(overlays={str(path): buffer})).to_json()
        [target] = unsaved["targets"]
        assert (target["status"], target["cached"]) == ("failed", False)
        [finding] = unsaved["findings"]
        assert (finding["code"], finding["file"], finding["line"]) == ("FXS101", "m.py", 6)
        assert finding["column"] == 12

        again = check_report(engine.check()).to_json()  # the buffer closed: the disk version, from the cache
        assert [(t["status"], t["cached"]) for t in again["targets"]] == [("traced", True)]
        assert again["findings"] == []

        reopened = check_report(engine.check(overlays={str(path): buffer})).to_json()
        assert [(t["status"], t["cached"]) for t in reopened["targets"]] == [("failed", True)]
    assert path.read_text() == on_disk

    with Engine(tmp_path) as engine:  # a new engine (another process) sees the disk result
        fresh = check_report(engine.check()).to_json()
        assert [(t["status"], t["cached"]) for t in fresh["targets"]] == [("traced", True)]
        assert engine._pool is None  # answered without starting a worker
    assert warnings == []


def test_config_warnings_reach_stderr_once_per_check(tmp_path):
    write_tree(tmp_path, {
        "pyproject.toml": """
            [tool.fxscope]
            leaf-modules = ["layers.NoSuchLayer"]
            """,
        "layers.py": "X = 1\n",
        "a.py": "from torch import nn\n\n\nclass A(nn.Module):\n    def forward(self, x):\n        return x\n",
        "b.py": "from torch import nn\n\n\nclass B(nn.Module):\n    def forward(self, x):\n        return -x\n",
    })
    for expect_cached in (False, True):
        run = run_check(tmp_path)
        assert all(t["cached"] is expect_cached for t in run.report["targets"])
        assert run.stderr.count("leaf-modules entry 'layers.NoSuchLayer'") == 1, run.stderr
        assert "leaf-modules" not in run.stdout


def test_engine_check_never_imports_the_layers_above(tmp_path: Path) -> None:
    """The engine hands a typed CheckResult up; report/ and the front ends render it."""
    code = (
        "import json, sys\n"
        "from fxscope.engine import Engine\n"
        f"with Engine({str(tmp_path)!r}) as engine:\n"
        "    result = engine.check()\n"
        "print(json.dumps({'type': type(result).__name__, 'targets': len(result.results),\n"
        "                  'modules': sorted(m for m in sys.modules if m.startswith('fxscope.'))}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=cli_env(), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["type"], out["targets"]) == ("CheckResult", 0)
    above = [m for m in out["modules"] if m.split(".")[1] in ("report", "server", "lsp", "cli")]
    assert above == [], above
    assert "fxscope.engine.engine" in out["modules"]
