"""An analysis registered by a workspace plug-in (``plugins`` in [tool.fxscope], options from its own
``[tool.fxscope.analysis.<name>]`` table) runs through the real CLI: its summary is in the JSON
report (valid against the schema), in the text report, and in the cache, with no line of fxscope's
model, engine, report or session code naming it."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from engine_support import SCHEMA, run_check, run_fxscope, write_tree

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

PLUGIN = Path(__file__).resolve().parents[1] / "models" / "plugins" / "fxs_params.py"

PYPROJECT = """
    [tool.fxscope]
    auto-targets = false
    plugins = ["fxs_params"]
    {options}

    [tool.fxscope.targets.net]
    factory = "net:Net"
    inputs = {{ x = [2, 4] }}
    analyses = ["fx", "params"]
    """

MODEL = """
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x).relu()
    """


def _workspace(root: Path, options: str) -> Path:
    write_tree(root, {"pyproject.toml": PYPROJECT.format(options=options), "net.py": MODEL,
                      "fxs_params.py": PLUGIN.read_text(encoding="utf-8")})
    return root


def test_a_plugin_analysis_reports_its_summary(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", "[tool.fxscope.analysis.params]\n    limit = 10")
    run = run_check(root, timeout=600)
    jsonschema.validate(run.report, json.loads(SCHEMA.read_text()))
    params = run.targets["net"]["analyses"]["params"]
    assert params == {**params, "ok": False, "headline": "20 parameters (limit 10)", "counts": {"parameters": 20},
                      "details": {"limit": 10}}
    assert run.targets["net"]["status"] == "traced"  # fx decides the status; the plug-in only reports
    again = run_check(root, timeout=600)
    assert again.targets["net"]["cached"] and again.targets["net"]["analyses"] == run.targets["net"]["analyses"]
    text = run_fxscope(root, "check", ".", "--format", "text", "--no-cache")
    assert "net: params not ok: 20 parameters (limit 10)" in text.stdout.splitlines(), text.stdout


def test_a_plugin_option_of_the_wrong_type_is_a_warning_and_its_default_is_used(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", '[tool.fxscope.analysis.params]\n    limit = "ten"\n    colour = "red"')
    run = run_check(root, timeout=600)
    assert run.targets["net"]["analyses"]["params"]["headline"] == "20 parameters (limit 1000)"
    assert "the params analysis's option 'limit' must be int, got 'ten'" in run.stderr
    assert "unknown option 'colour' of the params analysis (it has 'limit')" in run.stderr


def test_an_analysis_no_plugin_registers_is_a_warning(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", "")
    (root / "fxs_params.py").write_text("# registers nothing\n")
    run = run_check(root, timeout=600)
    assert run.targets["net"]["status"] == "traced" and "analyses" not in run.targets["net"]
    assert "no analysis is named 'params' (registered: fx, compile, export; see 'plugins')" in run.stderr


def test_the_analyses_flag_takes_an_analysis_a_plugin_registers(tmp_path: Path) -> None:
    root = _workspace(tmp_path / "ws", "")
    pyproject = root / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('analyses = ["fx", "params"]\n', ""))
    run = run_check(root, "--analyses", "fx,params", timeout=600)
    assert run.targets["net"]["analyses"]["params"]["headline"] == "20 parameters (limit 1000)"
    (root / "pyproject.toml").write_text(pyproject.read_text().replace('plugins = ["fxs_params"]\n', ""))
    bad = run_fxscope(root, "check", "--analyses", "fx,params")
    assert bad.returncode == 2 and "'params' is not one of fx, compile, export" in bad.stderr, bad.stderr
