"""One finding per library cause (fxscope.report.causes) and the workspace anchor of library
failures: grouping keeps every site (as ``sites``, each a whole finding), never groups workspace
code or different fixes, and a failure with no workspace frame is shown in the workspace."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema

from engine_support import SCHEMA

from fxscope.engine.results import TargetResult
from fxscope.model import Finding, Location, Report, Scope, TargetOutcome
from fxscope.project.discovery import Target
from fxscope.report.build import build_report
from fxscope.report.causes import group_by_cause, group_report, recommended_setting, site_count, ungroup
from fxscope.report.libraries import KNOWN, missing_entries

ROOT = "/ws"
BACKENDS = "/venv/lib/python3.11/site-packages/einops/_backends.py"
LAYERS = "/venv/lib/python3.11/site-packages/einops/layers/torch.py"
WRAP = 'Record each call as one node with `wrap-functions = ["einops:rearrange"]` in [tool.fxscope].'


def _lib(file: str, line: int, target: str, hint: str = WRAP, scope: str = "") -> Finding:
    return Finding("FXS107", "error", "RuntimeError: Tensor type unknown to einops", Location(BACKENDS, 62, 5),
                   hint=hint, target=target, anchor=Location(file, line, 16),
                   scopes=(Scope(scope, "m.Net", target),))


def test_one_finding_per_cause_and_file_with_every_site_kept() -> None:
    found = [_lib("a.py", 30, "a.py::C"), _lib("a.py", 12, "a.py::A"), _lib("a.py", 17, "a.py::B"),
             _lib("b.py", 5, "b.py::D"),
             Finding("FXS101", "error", "if on a tensor", Location("a.py", 40), target="a.py::A"),
             Finding("FXS101", "error", "if on a tensor", Location("a.py", 41), target="a.py::A")]
    grouped = group_by_cause(found)
    shown = [(f.primary.file, f.primary.line, [s.primary.line for s in f.sites]) for f in grouped]
    # a.py: one finding at its first line; b.py its own; workspace code is never grouped
    assert shown == [("a.py", 12, [17, 30]), ("a.py", 40, []), ("a.py", 41, []), ("b.py", 5, [])]
    assert site_count(grouped) == len(found)
    assert sorted(ungroup(grouped), key=lambda f: (f.primary.file, f.primary.line)) == sorted(
        found, key=lambda f: (f.primary.file, f.primary.line))
    assert group_by_cause(grouped) == grouped  # grouping twice changes nothing


def test_different_fixes_or_library_lines_are_different_causes() -> None:
    repeat = 'Record each call as one node with `wrap-functions = ["einops:repeat"]` in [tool.fxscope].'
    found = [_lib("a.py", 12, "a.py::A"), _lib("a.py", 17, "a.py::B", hint=repeat),
             replace(_lib("a.py", 20, "a.py::E"), location=Location(LAYERS, 15, 18))]
    assert [len(f.sites) for f in group_by_cause(found)] == [0, 0, 0]


def test_the_report_groups_and_stays_valid_against_schema_v1() -> None:
    report = Report(ROOT, "2.13", (), tuple([_lib("a.py", 12, "a.py::A"), _lib("a.py", 17, "a.py::B")]),
                    build_report(ROOT, "2.13", []).summary)
    grouped = group_report(report)
    doc = grouped.to_json()
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(doc)
    (finding,) = doc["findings"]
    assert finding["anchor"]["line"] == 12 and [s["anchor"]["line"] for s in finding["sites"]] == [17]
    assert doc["summary"]["by_severity"]["error"] == 1
    assert Report.from_json(doc).findings == grouped.findings  # sites read back as findings


def test_recommended_setting_is_the_first_one_the_hint_names() -> None:
    hint = ('keep the layer opaque with `leaf-modules = ["einops.layers.torch.Rearrange"]`, or '
            '`wrap-functions = ["einops:rearrange"]`')
    assert recommended_setting(hint) == ("leaf-modules", "einops.layers.torch.Rearrange")
    assert recommended_setting("no setting here") is None
    # the fallback hint's placeholder names no function: nothing to add
    assert recommended_setting('opaque with `wrap-functions = ["package.module:function"]`') is None


def test_known_library_settings_skip_what_is_configured() -> None:
    einops = KNOWN["einops"]
    config = {"leaf-modules": list(einops.leaf_modules), "wrap-functions": ["einops:rearrange"]}
    assert all(key == "wrap-functions" for key, _ in missing_entries(einops, config))
    assert ("wrap-functions", "einops:rearrange") not in missing_entries(einops, config)


def _layer_alone(target: str, path: str) -> dict:
    """A library layer traced on its own (its parent failed): no workspace frame, no anchor, as
    the tracer reports an einops ``Rearrange`` inside an ``nn.Sequential`` on vit-pytorch."""
    return {"code": "FXS107", "severity": "error", "message": "KeyError: Proxy(getattr_1)", "file": LAYERS,
            "line": 15, "column": 18, "end_column": 47,
            "scopes": [{"path": path, "type": "einops.layers.torch.Rearrange"}]}


def _modules() -> list[dict]:
    return [{"path": "", "type": "m.ViT", "status": "failed", "file": f"{ROOT}/m.py", "line": 90},
            {"path": "embed", "type": "m.Embed", "status": "failed", "file": f"{ROOT}/m.py", "line": 20},
            {"path": "embed.seq", "type": "torch.nn.Sequential", "status": "traced"},
            {"path": "embed.seq.0", "type": "einops.layers.torch.Rearrange", "status": "failed",
             "file": LAYERS, "line": 13}]


def _vit(findings: list[dict]) -> TargetResult:
    target = Target(id="m.py::ViT", kind="class", file="m.py", line=90, module="m", qualname="ViT")
    body = {"status": "partial", "nodes": 0, "modules": _modules(), "findings": findings}
    return TargetResult(target, TargetOutcome.from_json(body, target=target.id))


def test_a_library_failure_without_workspace_frame_is_shown_in_the_workspace() -> None:
    report = build_report(ROOT, "2.13", [_vit([_layer_alone("m.py::ViT", "embed.seq.0")])])
    (finding,) = report.findings
    # the innermost workspace module holding the failing layer: Embed, defined at m.py:20
    assert finding.primary == Location("m.py", 20) and finding.origin is not None
    assert finding.scopes[0].path == "embed.seq.0"


def test_a_repeat_of_a_failure_the_callers_trace_located_is_not_a_second_finding() -> None:
    located = dict(_layer_alone("m.py::ViT", "embed.seq.0"), anchor={"file": f"{ROOT}/m.py", "line": 25, "column": 16})
    report = build_report(ROOT, "2.13", [_vit([located, _layer_alone("m.py::ViT", "embed.seq.0")])])
    (finding,) = report.findings
    assert finding.primary.line == 25
