"""The real CLI on a workspace whose classes fail inside einops (installed, outside the workspace):
the report lists one finding per library cause and file at the user's line, with every other line
in ``sites``; SARIF keeps one result per line; ``fxscope init`` writes einops' documented settings
to pyproject.toml, after which the same classes trace."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import jsonschema
import pytest

from engine_support import SCHEMA, assert_schema_describes, run_check, run_fxscope

pytestmark = pytest.mark.requires_torch

pytest.importorskip("einops")

MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("einops") / "ws"
    root.mkdir()
    shutil.copy(MODELS / "einops_calls.py", root / "einops_calls.py")
    (root / "pyproject.toml").write_text('[project]\nname = "demo"\n')
    return root


def _line(root: Path, tag: str) -> int:
    lines = (root / "einops_calls.py").read_text().split("\n")
    (hit,) = [i for i, line in enumerate(lines, 1) if line.rstrip().endswith(f"# ANCHOR {tag}")]
    return hit


def test_one_finding_per_library_cause_with_its_sites(ws: Path) -> None:
    run = run_check(ws, "--fail-on", "never")
    doc = run.report
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert_schema_describes(doc, schema)
    rearrange = [f for f in doc["findings"] if 'wrap-functions = ["einops:rearrange"]' in (f.get("hint") or "")]
    # split, merge, the head and the autocast forward (no config yet): four lines, one cause, one finding
    (finding,) = rearrange
    assert finding["anchor"] == {**finding["anchor"], "file": "einops_calls.py", "line": _line(ws, "split")}
    site_lines = [s["anchor"]["line"] for s in finding["sites"]]
    assert _line(ws, "merge") in site_lines and _line(ws, "autocast") in site_lines and len(site_lines) == 3
    assert site_lines == sorted(site_lines)
    assert all(s["file"] == finding["file"] and s["line"] == finding["line"] for s in finding["sites"])
    # the other causes of this file stay their own findings: repeat, the Rearrange layer
    hints = [f.get("hint") or "" for f in doc["findings"] if f["severity"] == "error"]
    assert any('["einops:repeat"]' in h for h in hints) and any("einops.layers.torch.Rearrange" in h for h in hints)
    # nothing is attributed to a file outside the workspace
    assert all(not (f.get("anchor") or f)["file"].startswith("/") for f in doc["findings"])
    # SARIF keeps a result per line (code scanning tracks each); text says how many lines share a cause
    sarif = json.loads(run_fxscope(ws, "check", ".", "--format", "sarif", "--fail-on", "never").stdout)
    lines = {r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in sarif["runs"][0]["results"]}
    assert {_line(ws, "split"), _line(ws, "merge")} <= lines
    text = run_fxscope(ws, "check", ".", "--color", "never", "--fail-on", "never").stdout
    assert f"also: lines {_line(ws, 'merge')}:16" in text, text
    # every target that saw an error counts, also those only a grouped line names
    failing = {t["id"] for t in doc["targets"] if t["status"] in ("failed", "partial")}
    assert f"in {len(failing)} of {len(doc['targets'])} targets" in text.splitlines()[-1], text.splitlines()[-1]


def test_init_writes_the_library_settings_and_they_work(ws: Path) -> None:
    proc = run_fxscope(ws, "init")
    assert proc.returncode == 0, proc.stderr
    assert "settings for einops" in proc.stdout
    config = tomllib.loads((ws / "pyproject.toml").read_text())
    assert config["project"]["name"] == "demo"
    assert "einops:rearrange" in config["tool"]["fxscope"]["wrap-functions"]
    assert "einops.layers.torch.Rearrange" in config["tool"]["fxscope"]["leaf-modules"]
    again = run_fxscope(ws, "init")
    assert "settings for einops" not in again.stdout  # written once
    doc = run_check(ws, "--fail-on", "never").report
    errors = [f for f in doc["findings"] if f["severity"] == "error"]
    # only the autocast-decorated forward still fails: fx cannot patch its globals (the finding says so)
    assert [(f.get("anchor") or f)["line"] for f in errors] == [_line(ws, "autocast")], errors
