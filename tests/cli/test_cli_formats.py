"""Output side of ``fxscope check``: text/json/sarif/github renderers, filters, baselines, progress.

Reports are built by hand (as the engine would produce them) over source files written to tmp_path.
"""

from __future__ import annotations

import copy
import io
import json
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

from fxscope.report import baseline, filters
from fxscope.cli.formats import FORMATS
from fxscope.cli.formats import render as render_report
from fxscope.cli.formats.github import escape_data, escape_property
from fxscope.cli.formats.text import summary_line
from fxscope.cli.progress import Progress
from fxscope.model import Finding, Report
from fxscope.model.codes import CODES

GPT = """\
class GPT(nn.Module):
    def __init__(self):
        self.unused = nn.Linear(4, 4)
    def forward(self, x, mask):
        if mask.any():
            x = x + 1
        n = int(
            x.sum())
        return x
class Wrapper(nn.Module):
    def forward(self, x):
        return self.gpt(x, x > 0)
"""

BLOCKS = """\
import lib.ops
class Block(nn.Module):
    def forward(self, x):
        y = lib.ops.to_numpy(x)
        x.add_(1)
        return y
"""

OPS = """\
def to_numpy(t):
    return t.numpy()
"""


def _schema(name: str) -> dict:
    return json.loads(resources.files("fxscope").joinpath("schemas", name).read_text(encoding="utf-8"))


def _validate(doc: dict, schema: dict) -> None:
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    cls(schema).validate(doc)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with two model files, a library outside it; cwd is the workspace root."""
    root = tmp_path / "ws"
    (root / "models").mkdir(parents=True)
    (root / "models" / "gpt.py").write_text(GPT)
    (root / "models" / "blocks.py").write_text(BLOCKS)
    lib = tmp_path / "venv" / "site-packages" / "lib"
    lib.mkdir(parents=True)
    (lib / "ops.py").write_text(OPS)
    monkeypatch.chdir(root)
    return root


def R(doc: dict) -> Report:
    """The typed report of a report document (what the formats and filters take)."""
    return Report.from_json(doc)


def render(doc: dict | Report, fmt: str, *, color: bool, root: Path, **options: bool) -> str:
    return render_report(doc if isinstance(doc, Report) else R(doc), fmt, color=color, root=root, **options)


def _ops(root: Path) -> str:
    return str(root.parent / "venv" / "site-packages" / "lib" / "ops.py")


def make_report(root: Path) -> dict:
    scopes = [{"path": f"blocks.{i}.gpt", "type": "models.gpt.GPT"} for i in range(7)]
    findings = [
        {"code": "FXS101", "severity": "error", "message": "A traced value decides Python control flow: `if mask.any()`",
         "hint": "Use torch.where.", "file": "models/gpt.py", "line": 5, "column": 12, "end_line": 5,
         "end_column": 22, "target": "models/gpt.py::GPT", "scopes": scopes,
         "related": [{"file": "models/gpt.py", "line": 12, "column": 16, "end_line": 12, "end_column": 34,
                      "message": "Wrapper.forward"}]},
        {"code": "FXS301", "severity": "hint", "message": "Submodule `unused` is never called in forward",
         "file": "models/gpt.py", "line": 3, "target": "models/gpt.py::GPT",
         "scopes": [{"path": "", "type": "models.gpt.GPT"}]},
        {"code": "FXS104", "severity": "error", "message": "A traced value is used as a Python number: `int()`",
         "file": "models/gpt.py", "line": 7, "column": 13, "end_line": 8, "end_column": 21,
         "target": "models/gpt.py::GPT"},
        {"code": "FXS106", "severity": "error", "message": "A traced value reaches non-torch code: `t.numpy()`",
         "hint": "Keep it in torch.", "file": _ops(root), "line": 2, "column": 12, "end_line": 2, "end_column": 21,
         "anchor": {"file": "models/blocks.py", "line": 4, "column": 13, "end_line": 4, "end_column": 32},
         "target": "models/blocks.py::Block", "scopes": [{"path": "", "type": "models.blocks.Block"}]},
        {"code": "FXS201", "severity": "warning", "message": "In-place `add_` whose result has no users",
         "file": "models/blocks.py", "line": 5, "column": 9, "end_line": 5, "end_column": 18,
         "target": "models/blocks.py::Block"},
    ]
    targets = [
        {"id": "models/gpt.py::GPT", "kind": "class", "file": "models/gpt.py", "line": 1, "status": "partial",
         "cached": False, "duration_ms": 0.0, "nodes": 0,
         "modules": [{"path": "", "type": "models.gpt.GPT", "status": "failed", "params": 0}]},
        {"id": "models/blocks.py::Block", "kind": "class", "file": "models/blocks.py", "line": 2,
         "status": "failed", "cached": False, "duration_ms": 0.0, "nodes": 0,
         "modules": [{"path": "", "type": "models.blocks.Block", "status": "failed", "params": 0}]},
        {"id": "models/gpt.py::Wrapper", "kind": "class", "file": "models/gpt.py", "line": 10, "status": "traced",
         "cached": True, "duration_ms": 0.0, "nodes": 0,
         "modules": [{"path": "", "type": "models.gpt.Wrapper", "status": "traced", "params": 0}]},
    ]
    return {
        "version": 2, "tool": {"name": "fxscope", "version": "0.1.0"}, "torch": "2.3.0", "root": str(root),
        "targets": targets, "findings": findings,
        "summary": {"targets": 3, "by_status": {"traced": 1, "partial": 1, "failed": 1},
                    "by_severity": {"error": 3, "warning": 1, "info": 0, "hint": 1},
                    "cached": 1, "duration_ms": 420.0},
    }


def clean_report(root: Path) -> dict:
    report = make_report(root)
    report["findings"] = []
    report["summary"].update(by_status={"traced": 3}, by_severity={}, cached=2, duration_ms=120)
    return report


def test_report_fixture_is_valid(ws: Path) -> None:
    _validate(make_report(ws), _schema("report.schema.json"))


# --- text -------------------------------------------------------------------------------------


def test_text_output_exact(ws: Path) -> None:
    out = render(make_report(ws), "text", color=False, root=ws)
    assert out == f"""\
models/blocks.py:4:13: FXS106 A traced value reaches non-torch code: `t.numpy()`
  4 |         y = lib.ops.to_numpy(x)
    |             ^^^^^^^^^^^^^^^^^^^
  origin: {_ops(ws)}:2:12
  2 |     return t.numpy()
    |            ^^^^^^^^^
  hint: Keep it in torch.
  in: <root> (models.blocks.Block)

models/blocks.py:5:9: FXS201 In-place `add_` whose result has no users
  5 |         x.add_(1)
    |         ^^^^^^^^^

models/gpt.py:3: FXS301 Submodule `unused` is never called in forward
  3 |         self.unused = nn.Linear(4, 4)
    |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  in: <root> (models.gpt.GPT)

models/gpt.py:5:12: FXS101 A traced value decides Python control flow: `if mask.any()`
  5 |         if mask.any():
    |            ^^^^^^^^^^
  hint: Use torch.where.
  in: blocks.0.gpt (models.gpt.GPT), blocks.1.gpt (models.gpt.GPT), blocks.2.gpt (models.gpt.GPT), \
blocks.3.gpt (models.gpt.GPT), blocks.4.gpt (models.gpt.GPT) and 2 more
  via: models/gpt.py:12:16 (Wrapper.forward)

models/gpt.py:7:13: FXS104 A traced value is used as a Python number: `int()`
  7 |         n = int(
    |             ^^^^

Found 3 errors, 1 warning, 1 hint in 2 of 3 targets (1 traced, 1 partial, 1 failed; 1 cached) in 0.42s
"""
    assert "\x1b" not in out


def test_text_caret_under_exact_columns(ws: Path) -> None:
    lines = render(make_report(ws), "text", color=False, root=ws).splitlines()
    i = lines.index("  5 |         if mask.any():")
    src, carets = lines[i], lines[i + 1]
    start = carets.index("^")
    assert src[start:start + carets.count("^")] == "mask.any()"


def test_text_paths_relative_to_cwd(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ws.parent)
    out = render(make_report(ws), "text", color=False, root=ws)
    assert out.startswith("ws/models/blocks.py:4:13: FXS106 ")
    monkeypatch.chdir(ws / "models")
    out = render(make_report(ws), "text", color=False, root=ws)
    assert out.startswith("blocks.py:4:13: FXS106 ")
    monkeypatch.chdir(ws.parent / "venv")  # not under cwd: absolute paths
    out = render(make_report(ws), "text", color=False, root=ws)
    assert out.startswith(f"{(ws / 'models' / 'blocks.py').as_posix()}:4:13: ")


def test_text_tabs_keep_carets_aligned(ws: Path) -> None:
    (ws / "t.py").write_text("def f(x):\n\tif x:\n\t\tpass\n")
    report = clean_report(ws)
    report["findings"] = [{"code": "FXS101", "severity": "error", "message": "m", "file": "t.py", "line": 2,
                           "column": 5, "end_column": 6, "target": "t"}]
    lines = render(report, "text", color=False, root=ws).splitlines()
    assert lines[1:3] == ["  2 | \tif x:", "    | \t   ^"]


def test_text_missing_source_has_no_snippet(ws: Path) -> None:
    report = make_report(ws)
    (ws / "models" / "blocks.py").unlink()
    out = render(report, "text", color=False, root=ws)
    assert "models/blocks.py:5:9: FXS201 In-place `add_` whose result has no users\n\n" in out


def test_text_colour_only_when_asked(ws: Path) -> None:
    plain = render(make_report(ws), "text", color=False, root=ws)
    coloured = render(make_report(ws), "text", color=True, root=ws)
    assert "\x1b[" not in plain
    assert "\x1b[1;31mFXS101\x1b[0m" in coloured
    assert "\x1b[1;33mFXS201\x1b[0m" in coloured
    assert "\x1b[1;36mFXS301\x1b[0m" in coloured
    assert "\x1b[1mmodels/gpt.py\x1b[0m:5:12: " in coloured


def test_text_summary_variants(ws: Path) -> None:
    assert summary_line(R(clean_report(ws))) == "All checks passed: 3 targets traced (2 cached) in 0.12s"
    report = clean_report(ws)
    report["summary"].update(by_status={"traced": 2, "skipped": 1}, cached=0, suppressed=2, baselined=1)
    assert summary_line(R(report)) == ("All checks passed: 3 targets (2 traced, 1 skipped) in 0.12s "
                                       "(2 suppressed, 1 in baseline)")
    report["summary"].update(targets=0, by_status={})
    assert summary_line(R(report)).startswith("No targets to check in 0.12s")
    report = make_report(ws)
    report["findings"] = report["findings"][:1]
    assert summary_line(R(report)) == "Found 1 error in 1 of 3 targets (1 traced, 1 partial, 1 failed; 1 cached) in 0.42s"
    assert render(clean_report(ws), "text", color=False, root=ws) == (
        "All checks passed: 3 targets traced (2 cached) in 0.12s\n")


# --- json / dispatch --------------------------------------------------------------------------


def test_json_roundtrip_and_dispatch(ws: Path) -> None:
    report = make_report(ws)
    out = render(report, "json", color=True, root=ws)
    assert json.loads(out) == report
    assert R(json.loads(out)) == R(report)
    assert set(FORMATS) == {"text", "json", "sarif", "github"}
    with pytest.raises(ValueError, match="unknown format"):
        render(report, "xml", color=False, root=ws)


# --- github -----------------------------------------------------------------------------------


def test_github_escaping() -> None:
    assert escape_data("100%\r\nok: a,b") == "100%25%0D%0Aok: a,b"
    assert escape_property("dir,x/a:b.py%") == "dir%2Cx/a%3Ab.py%25"


def test_github_annotations(ws: Path) -> None:
    lines = render(make_report(ws), "github", color=False, root=ws).splitlines()
    assert len(lines) == 5
    assert lines[0] == (
        "::error file=models/blocks.py,line=4,col=13,endLine=4,endColumn=32,"
        "title=FXS106 (traced-value-leaves-torch)::A traced value reaches non-torch code: `t.numpy()`"
        f"%0Aat {_ops(ws)}:2:12%0AKeep it in torch."
    )
    assert lines[1].startswith("::warning file=models/blocks.py,line=5,col=9,endLine=5,endColumn=18,")
    assert lines[2] == ("::notice file=models/gpt.py,line=3,title=FXS301 (unused-submodule)::"
                        "Submodule `unused` is never called in forward")
    assert lines[3].endswith("::A traced value decides Python control flow: `if mask.any()`%0AUse torch.where.")
    assert render(clean_report(ws), "github", color=False, root=ws) == ""


def test_github_escapes_file_property(ws: Path) -> None:
    (ws / "a,b:c.py").write_text("x\n")
    report = clean_report(ws)
    report["findings"] = [{"code": "FXS107", "severity": "error", "message": "50% done\nboom",
                           "file": "a,b:c.py", "line": 1, "target": "t"}]
    out = render(report, "github", color=False, root=ws)
    assert out == "::error file=a%2Cb%3Ac.py,line=1,title=FXS107 (trace-exception)::50%25 done%0Aboom\n"


# --- sarif ------------------------------------------------------------------------------------


def test_sarif_valid_and_complete(ws: Path) -> None:
    log = json.loads(render(make_report(ws), "sarif", color=False, root=ws))
    _validate(log, _schema("sarif-schema-2.1.0.json"))
    assert log["version"] == "2.1.0" and len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "fxscope" and "informationUri" not in driver
    rule_ids = [r["id"] for r in driver["rules"]]
    assert sorted(rule_ids) == sorted(CODES)
    for r in driver["rules"]:
        code = CODES[r["id"]]
        assert r["name"] == code.name
        assert r["shortDescription"]["text"] == code.title
        assert r["fullDescription"]["text"] == code.help == r["help"]["text"]
        expected = {"error": "error", "warning": "warning", "info": "note", "hint": "note"}[code.severity]
        assert r["defaultConfiguration"]["level"] == expected
        assert r["properties"]["tags"]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ws.as_uri() + "/"
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["FXS106", "FXS201", "FXS301", "FXS101", "FXS104"]
    for r in results:
        assert rule_ids[r["ruleIndex"]] == r["ruleId"]
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not loc["artifactLocation"]["uri"].startswith(("/", "file:"))
    fps = [r["partialFingerprints"]["fxscope/v1"] for r in results]
    assert len(set(fps)) == 5

    outside = results[0]
    assert outside["level"] == "error"
    assert outside["message"]["text"] == "A traced value reaches non-torch code: `t.numpy()`\nHint: Keep it in torch."
    assert outside["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "models/blocks.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 4, "startColumn": 13, "endLine": 4, "endColumn": 32},
    }
    rel = outside["relatedLocations"][0]["physicalLocation"]
    assert rel["artifactLocation"] == {"uri": Path(_ops(ws)).as_uri()}
    assert rel["region"]["startLine"] == 2
    assert results[1]["level"] == "warning" and results[2]["level"] == "note"
    assert results[2]["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}

    chained = results[3]
    steps = chained["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["location"]["physicalLocation"]["region"]["startLine"] for s in steps] == [12, 5]
    assert chained["relatedLocations"][0]["message"]["text"] == "Wrapper.forward"
    assert run["properties"]["summary"]["targets"] == 3


def test_sarif_clean_report_valid(ws: Path) -> None:
    log = json.loads(render(clean_report(ws), "sarif", color=False, root=ws))
    _validate(log, _schema("sarif-schema-2.1.0.json"))
    assert log["runs"][0]["results"] == []
    assert len(log["runs"][0]["tool"]["driver"]["rules"]) == len(CODES)


# --- select / ignore ----------------------------------------------------------------------------


def _codes(report: Report) -> list[str]:
    return sorted(f.code for f in report.findings)


def test_select_ignore_prefixes(ws: Path) -> None:
    report = R(make_report(ws))
    assert _codes(filters.select_findings(report, None, None)) == _codes(report)
    assert _codes(filters.select_findings(report, ["FXS1"], None)) == ["FXS101", "FXS104", "FXS106"]
    assert _codes(filters.select_findings(report, ["FXS101", "FXS2"], None)) == ["FXS101", "FXS201"]
    assert _codes(filters.select_findings(report, ["ALL"], ["FXS1"])) == ["FXS201", "FXS301"]
    assert _codes(filters.select_findings(report, None, ["fxs104,FXS3"])) == ["FXS101", "FXS106", "FXS201"]
    # The more specific selector wins, as in ruff.
    assert _codes(filters.select_findings(report, ["FXS1"], ["FXS104"])) == ["FXS101", "FXS106"]
    assert _codes(filters.select_findings(report, ["FXS104"], ["FXS1"])) == ["FXS104"]
    selected = filters.select_findings(report, ["FXS2"], None)
    assert selected.summary.by_severity == {"error": 0, "warning": 1, "info": 0, "hint": 0}
    assert len(report.findings) == 5  # input untouched
    with pytest.raises(ValueError, match="unknown code or prefix"):
        filters.select_findings(report, ["E501"], None)


# --- suppressions -------------------------------------------------------------------------------


def test_suppression_comments(ws: Path) -> None:
    gpt = ws / "models" / "gpt.py"
    text = GPT.replace("if mask.any():", "if mask.any():  # fxscope: ignore[ FXS102 , FXS101 ]")
    text = text.replace("n = int(", "n = int(  # fxscope: ignore[FXS101]")  # wrong code: kept
    text = text.replace("nn.Linear(4, 4)", "nn.Linear(4, 4)  # noqa  # fxscope: ignore")
    gpt.write_text(text)
    out = filters.apply_suppressions(R(make_report(ws)), ws)
    assert _codes(out) == ["FXS104", "FXS106", "FXS201"]
    assert out.summary.suppressed == 2
    assert out.summary.by_severity == {"error": 2, "warning": 1, "info": 0, "hint": 0}


def test_suppression_uses_anchor_for_outside_files(ws: Path) -> None:
    blocks = ws / "models" / "blocks.py"
    blocks.write_text(BLOCKS.replace("to_numpy(x)", "to_numpy(x)  # fxscope: ignore[FXS106]"))
    out = filters.apply_suppressions(R(make_report(ws)), ws)
    assert "FXS106" not in _codes(out) and out.summary.suppressed == 1
    # A comment in the library file itself does not count.
    blocks.write_text(BLOCKS)
    Path(_ops(ws)).write_text(OPS.replace("t.numpy()", "t.numpy()  # fxscope: ignore"))
    assert "FXS106" in _codes(filters.apply_suppressions(R(make_report(ws)), ws))


def test_suppressed_codes_parsing() -> None:
    assert filters.suppressed_codes("x  # fxscope: ignore") == {"ALL"}
    assert filters.suppressed_codes("x  #fxscope:ignore[FXS101]") == {"FXS101"}
    assert filters.suppressed_codes("x  # fxscope: ignore[FXS101,FXS104]") == {"FXS101", "FXS104"}
    assert filters.suppressed_codes("x  # fxscope: ignored") is None
    assert filters.suppressed_codes("x = 1") is None


# --- exit codes ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("keep", "fail_on", "code"),
    [
        (None, "error", 1), (None, "never", 0),
        (["FXS2", "FXS3"], "error", 0), (["FXS2", "FXS3"], "warning", 1),
        (["FXS3"], "warning", 0), (["FXS3"], "info", 0), (["FXS3"], "hint", 1),
        ([], "hint", 0),
    ],
)
def test_exit_code(ws: Path, keep: list[str] | None, fail_on: str, code: int) -> None:
    report = R(make_report(ws))
    if keep is not None:
        report = filters.select_findings(report, keep, None) if keep else filters.recount(report, [])
    assert filters.exit_code(report, fail_on) == code


def test_exit_code_info(ws: Path) -> None:
    report = clean_report(ws)
    report["findings"] = [{"code": "FXS405", "severity": "info", "message": "m", "file": "models/gpt.py",
                           "line": 1, "target": "t"}]
    report = R(report)
    assert [filters.exit_code(report, s) for s in ("error", "warning", "info", "hint")] == [0, 0, 1, 1]
    with pytest.raises(ValueError):
        filters.exit_code(report, "fatal")


# --- baseline -----------------------------------------------------------------------------------


def test_baseline_filters_old_findings_keeps_new(ws: Path, tmp_path: Path) -> None:
    old = make_report(ws)
    new_finding = old["findings"].pop(4)  # FXS201 appears later
    path = tmp_path / "baseline.json"
    assert baseline.write_baseline(path, R(old), ws) == 4
    doc = json.loads(path.read_text())
    assert doc["version"] == 1
    assert [(e["file"], e["line"], e["code"]) for e in doc["findings"]] == [
        ("models/blocks.py", 4, "FXS106"), ("models/gpt.py", 3, "FXS301"),
        ("models/gpt.py", 5, "FXS101"), ("models/gpt.py", 7, "FXS104")]
    out = baseline.filter_baseline(R(make_report(ws)), path, ws)
    assert [f.to_json() for f in out.findings] == [new_finding]
    assert out.summary.baselined == 4
    assert out.summary.by_severity == {"error": 0, "warning": 1, "info": 0, "hint": 0}


def test_fingerprint_stable_when_lines_inserted_above(ws: Path, tmp_path: Path) -> None:
    before = make_report(ws)
    fps = baseline.fingerprints(R(before).findings, ws)
    path = tmp_path / "baseline.json"
    baseline.write_baseline(path, R(before), ws)

    for name, text in (("gpt.py", GPT), ("blocks.py", BLOCKS)):
        (ws / "models" / name).write_text("import torch\n\n# a comment\n" + text)
    after = copy.deepcopy(before)
    for f in after["findings"]:
        for loc in [f, f.get("anchor")] + (f.get("related") or []):
            if loc and not os.path.isabs(loc["file"]):
                loc["line"] += 3
                loc["end_line"] = loc["end_line"] + 3 if "end_line" in loc else loc["line"]
    assert baseline.fingerprints(R(after).findings, ws) == fps
    assert baseline.filter_baseline(R(after), path, ws).findings == ()

    # Changing the offending line itself gives a new fingerprint.
    (ws / "models" / "gpt.py").write_text(
        "import torch\n\n# a comment\n" + GPT.replace("if mask.any():", "if mask.all():"))
    changed = baseline.fingerprints(R(after).findings, ws)
    assert changed[0] != fps[0] and changed[1:] == fps[1:]


def test_fingerprint_duplicates_stay_distinct(ws: Path) -> None:
    (ws / "d.py").write_text("x.add_(1)\nx.add_(1)\n")
    f = {"code": "FXS201", "severity": "warning", "message": "m", "file": "d.py", "column": 1,
         "end_column": 10, "target": "t"}
    a, b = Finding.from_json({**f, "line": 1}), Finding.from_json({**f, "line": 2})
    fps = baseline.fingerprints([b, a], ws)
    assert len(set(fps)) == 2
    assert baseline.fingerprints([a, b], ws) == fps[::-1]  # numbered in source order, not list order
    assert baseline.fingerprint(a, ws) == fps[1]


def test_fingerprint_ignores_message_and_indentation(ws: Path) -> None:
    f = make_report(ws)["findings"][4]
    fp = baseline.fingerprint(Finding.from_json(f), ws)
    assert baseline.fingerprint(Finding.from_json({**f, "message": "other wording", "scopes": []}), ws) == fp
    (ws / "models" / "blocks.py").write_text(BLOCKS.replace("        x.add_(1)", "            x.add_(1)"))
    assert baseline.fingerprint(Finding.from_json({**f, "column": 13, "end_column": 22}), ws) == fp
    # The target is left out: shards and renames attribute a shared finding to another target.
    assert baseline.fingerprint(Finding.from_json({**f, "column": 13, "end_column": 22, "target": "other"}), ws) == fp


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"version": 2, "findings": []}', '{"version": 1}',
     '{"version": 1, "findings": [{"code": "FXS101"}]}', '{"version": 1, "findings": [1]}'],
)
def test_malformed_baseline(ws: Path, tmp_path: Path, content: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError) as info:
        baseline.filter_baseline(R(make_report(ws)), path, ws)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_baseline(ws: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read baseline"):
        baseline.filter_baseline(R(make_report(ws)), tmp_path / "nope.json", ws)


# --- progress -----------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_silent_without_tty() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    assert not progress.enabled
    progress.start(3)
    progress.update(1, 3, "m.py::Net")
    progress.finish()
    assert stream.getvalue() == ""


def test_progress_draws_and_clears(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the bar is cut to the terminal's width
    stream = _Tty()
    progress = Progress(stream, width=10)
    assert progress.enabled
    progress.start(4)
    progress.update(2, 4, "models/gpt.py::GPT")
    progress.update(4, 4)
    progress.finish()
    out = stream.getvalue()
    frames = out.split("\r")
    assert frames[1] == "[..........] 0/4"
    assert frames[2] == "[#####.....] 2/4 models/gpt.py::GPT"
    assert frames[3] == "[##########] 4/4" + " " * len(" models/gpt.py::GPT")
    assert frames[4].strip() == "" and out.endswith("\r")


# --- no torch -------------------------------------------------------------------------------------


def test_output_side_does_not_import_torch() -> None:
    code = (
        "import sys, fxscope.cli.formats as f, fxscope.report.filters, fxscope.report.baseline, "
        "fxscope.cli.progress\n"
        "for m in f.FORMATS: __import__('fxscope.cli.formats.' + f._MODULES[m])\n"
        "assert 'torch' not in sys.modules, 'torch imported'\n"
    )
    daemon = Path(__file__).resolve().parents[2] / "daemon"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(daemon), os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
