"""The report layer (fxscope.report): cross-target merging keyed by code, range and anchor, every
target kept, tracer hints kept, and the summary's words; each report valid against schema v1."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from engine_support import SCHEMA

from fxscope.cli.formats import render
from fxscope.cli.formats.text import summary_line
from fxscope.engine.results import TargetResult
from fxscope.model import Finding, TargetOutcome
from fxscope.project.discovery import Target
from fxscope.model import Report
from fxscope.report.build import build_report, library_of

ROOT = "/ws"
EINOPS = "/venv/lib/python3.11/site-packages/einops/einops.py"


def _target(name: str, line: int) -> Target:
    return Target(id=f"models.py::{name}", kind="class", file="models.py", line=line, module="models",
                  qualname=name)


def _validate(report: Report) -> dict:
    doc = report.to_json()
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(doc)
    return doc


def _result(name: str, line: int, body: dict) -> TargetResult:
    target = _target(name, line)
    return TargetResult(target, TargetOutcome.from_json(body, target=target.id))


def _library_error(anchor_line: int, hint: str | None = None) -> dict:
    finding = {"code": "FXS102", "severity": "error", "message": "a traced value is iterated",
               "file": EINOPS, "line": 412, "column": 9, "end_column": 30,
               "anchor": {"file": f"{ROOT}/models.py", "line": anchor_line, "column": 16},
               "scopes": [{"path": "", "type": "models.Net"}]}
    if hint is not None:
        finding["hint"] = hint
    return finding


def test_library_findings_from_different_call_sites_stay_apart(tmp_path: Path) -> None:
    results = [_result(name, line, {"status": "failed", "modules": [], "nodes": 0,
                                    "findings": [_library_error(line + 3)]})
               for name, line in (("A", 10), ("B", 20), ("C", 30))]
    report = build_report(ROOT, "2.13.0", results)
    doc = _validate(report)
    assert [(f["anchor"]["line"], f["target"]) for f in doc["findings"]] == [
        (13, "models.py::A"), (23, "models.py::B"), (33, "models.py::C")]
    assert doc["summary"]["by_severity"]["error"] == 3
    root = Path(ROOT)
    sarif = json.loads(render(report, "sarif", color=False, root=root))
    assert len(sarif["runs"][0]["results"]) == 3
    github = render(report, "github", color=False, root=root).splitlines()
    assert [line.split(",", 2)[1] for line in github] == ["line=13", "line=23", "line=33"]
    # the fallback hint names the library and wrap-functions, never the root model as a leaf
    hint = doc["findings"][0]["hint"]
    assert "`einops`" in hint and "wrap-functions" in hint and "models.Net" not in hint


def test_same_call_site_seen_by_two_targets_is_one_finding_with_both() -> None:
    results = [_result(name, 10, {"status": "failed", "modules": [], "nodes": 0,
                                  "findings": [_library_error(13)]}) for name in ("A", "B")]
    [finding] = build_report(ROOT, "2.13.0", results).to_json()["findings"]
    assert finding["targets"] == ["models.py::A", "models.py::B"]
    assert [s["target"] for s in finding["scopes"]] == ["models.py::A", "models.py::B"]


def test_the_tracers_own_hint_is_kept() -> None:
    own = "keep `einops.rearrange` opaque: wrap-functions = [\"einops:rearrange\"]"
    result = _result("A", 10, {"status": "failed", "modules": [], "nodes": 0,
                               "findings": [_library_error(13, hint=own)]})
    [finding] = build_report(ROOT, "2.13.0", [result]).to_json()["findings"]
    assert finding["hint"] == own


def test_a_scopeless_finding_of_two_targets_keeps_both_and_the_summary_adds_up() -> None:
    build_error = {"code": "FXS401", "severity": "error", "message": "could not build: boom",
                   "file": f"{ROOT}/models.py", "line": 5}
    results = [_result(name, 10, {"status": "error", "modules": [], "nodes": 0,
                                  "findings": [dict(build_error)]}) for name in ("A", "B")]
    report = build_report(ROOT, "2.13.0", results)
    doc = _validate(report)
    [finding] = doc["findings"]
    assert finding["target"] == "models.py::A" and finding["targets"] == ["models.py::A", "models.py::B"]
    assert Finding.from_json(finding).all_targets() == ("models.py::A", "models.py::B")
    assert doc["summary"]["by_severity"]["error"] == 1 and doc["summary"]["by_status"] == {"error": 2}
    line = summary_line(report)
    assert line.startswith("Found 1 error in 2 of 2 targets (2 could not run)"), line
    assert line.count("error") == 1  # "error" is the severity only, never a status


def test_library_of() -> None:
    assert library_of(EINOPS) == "einops"
    assert library_of("/usr/lib/python3/dist-packages/six.py") == "six"
    assert library_of("models.py") is None
