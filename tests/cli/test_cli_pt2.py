"""The compile and export analyses through the real CLI: opt-in per target, their findings in every
output format, their summaries in the report, the cache, and the isolation and limits of fx."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

from engine_support import SCHEMA, cli_env, locate, run_check, run_fxscope, write_tree

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODELS = """
    import time

    import torch
    from torch import nn


    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            y = self.fc(x)
            if y.sum() > 0:  # BRANCH
                y = y * 2
            print("step")  # PRINT
            return y + 1


    class SlowWhenRun(nn.Module):
        def forward(self, x):
            if not torch.fx._symbolic_trace.is_fx_tracing():
                time.sleep(600)  # SLEEP
            return x + 1


    def build():
        return Branchy()
    """


def _workspace(root: Path, extra: str = "") -> Path:
    write_tree(root, {
        "pyproject.toml": f"""
            [tool.fxscope]
            timeout = 120

            [tool.fxscope.targets.branchy]
            factory = "models:build"
            inputs = {{ x = [2, 4] }}
            analyses = ["fx", "compile", "export"]
            {extra}
            """,
        "models.py": MODELS,
    })
    return root


def test_a_target_gets_the_analyses_it_asks_for(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    run = run_check(root, timeout=600)
    jsonschema.validate(run.report, json.loads(SCHEMA.read_text()))
    branch, _ = locate(root, "models.py", "# BRANCH")
    printed, _ = locate(root, "models.py", "# PRINT")
    target = run.targets["branchy"]
    assert {(f["code"], f["line"]) for f in run.findings("branchy") if f["code"][3] in "67"} >= {
        ("FXS601", branch), ("FXS601", printed), ("FXS701", branch)}
    compiled, exported = target["analyses"]["compile"], target["analyses"]["export"]
    assert compiled["counts"]["graphs"] >= 2 and compiled["counts"]["breaks"] == 2 and not compiled["ok"]
    assert not exported["ok"] and exported["counts"] == {"problems": 1} and exported["details"]["strict"] is False
    # the class targets keep the workspace's analyses: fx only
    assert "analyses" not in run.targets["models.py::Branchy"]
    assert not [f for f in run.findings("models.py::Branchy") if f["code"][3] in "67"]
    # answered from the cache the second time, with the summaries
    again = run_check(root, timeout=600)
    assert again.targets["branchy"]["cached"] and again.targets["branchy"]["analyses"] == target["analyses"]


def test_text_and_sarif_show_the_new_codes(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws")
    text = run_fxscope(root, "check", ".", "--format", "text")
    branch, _ = locate(root, "models.py", "# BRANCH")
    assert text.returncode == 1, text.stderr
    assert f"models.py:{branch}:12: FXS601 graph break: Data-dependent branching" in text.stdout
    assert f"models.py:{branch}:12: FXS701 torch.export needs a value that depends on tensor data" in text.stdout
    lines = text.stdout.splitlines()  # each analysis's headline, one line per target and analysis
    assert "branchy: export not ok: failed (1 problem)" in lines
    assert any(re.fullmatch(r"branchy: compile not ok: \d+ graphs, 2 graph breaks, \d+ recompilations?", line)
               for line in lines), lines
    sarif = run_fxscope(root, "check", ".", "--format", "sarif", "--fail-on", "never")
    log = json.loads(sarif.stdout)
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert "torch.compile" in rules["FXS601"]["properties"]["tags"]
    assert "torch.export" in rules["FXS701"]["properties"]["tags"]
    assert rules["FXS601"]["helpUri"].endswith("#the-compile-analysis")
    assert rules["FXS701"]["helpUri"].endswith("#the-export-analysis")
    assert {r["ruleId"] for r in log["runs"][0]["results"]} >= {"FXS601", "FXS701"}


def test_nothing_is_written_outside_the_cache_directory(tmp_path: Path) -> None:
    """torch.compile's caches (and Dynamo's profile of dynamic sizes) and draft_export's trace
    files go to each job's own directory, removed with it: TMPDIR and HOME stay empty."""
    root = _workspace(tmp_path / "ws")
    scratch, home = tmp_path / "tmp", tmp_path / "home"
    scratch.mkdir()
    home.mkdir()
    env = cli_env()
    env.update(TMPDIR=str(scratch), HOME=str(home))
    env.pop("TORCHINDUCTOR_CACHE_DIR", None)
    before = sorted(p.name for p in root.iterdir())
    proc = run_fxscope(root, "check", ".", "--format", "json", env=env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert json.loads(proc.stdout)["targets"]
    assert list(scratch.iterdir()) == [] and list(home.iterdir()) == []
    assert sorted(p.name for p in root.iterdir()) == sorted([*before, ".fxscope_cache"])


def test_the_timeout_covers_the_analyses(tmp_path: Path) -> None:
    """A forward that hangs only when it runs for real (torch.compile), not while fx traces it,
    times out like a trace does (FXS403, where it was stuck) and is cached as such."""
    root = _workspace(tmp_path / "ws", """
            [tool.fxscope.targets.slow]
            factory = "models:SlowWhenRun"
            inputs = { x = [2, 4] }
            analyses = ["fx", "compile"]
            """)
    text = (root / "pyproject.toml").read_text().replace("timeout = 120", "timeout = 20")
    (root / "pyproject.toml").write_text(text)
    run = run_check(root, timeout=600)
    sleep, _ = locate(root, "models.py", "# SLEEP")
    (finding,) = run.findings("slow", "FXS403")
    assert finding["line"] == sleep, finding
    assert run.targets["slow"]["status"] == "error"
    assert os.path.isdir(root / ".fxscope_cache")
