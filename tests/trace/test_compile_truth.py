"""The compile analysis against torch itself, over the corpus of tests/models/pt2/compile_breaks.py.

For every model, the installed torch is asked in a fresh process (tests/pt2_truth.py): where do
``torch._dynamo.explain`` and ``TORCH_LOGS=graph_breaks`` put its graph breaks, how many graphs does
explain count, which functions does ``TORCH_LOGS=recompiles`` recompile for a second batch size.
fxscope's report on the same models and inputs (the real CLI, its worker) must say exactly that:
every break torch reports at the same user line and no other, one finding per place, with torch's
graph-break type in its message, the same graph count, and one recompilation finding per function
torch recompiled. Nothing here is torch's text written down: the expectations come from the run.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from engine_support import run_check
from pt2_support import check, model_names, registry_types, shown_line, truth, workspace
from pt2_truth import parse_compile_log

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODULE = "compile_breaks"
_RESUME_RE = re.compile(r"^torch_dynamo_resume_in_(?P<name>.+)_at_\d+$")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any], Any, Path]:
    root = workspace(tmp_path_factory.mktemp("compile") / "ws", MODULE, ["compile"])
    answer, log = truth(root, "compile", MODULE)
    report = check(root)
    return answer, parse_compile_log(log, answer["file"]), report, root


def _torch_lines(answer: dict[str, Any], logged: dict[str, Any], name: str) -> set[int]:
    explained = {r["line"] for r in answer["models"][name]["explain"]}
    records = {r["line"] for r in logged.get(name, {}).get("breaks", [])}
    assert None not in explained | records, f"{name}: a break torch reports has no line in the corpus file"
    return explained | records


def test_the_corpus_breaks_where_torch_says_it_breaks(runs: tuple[Any, ...]) -> None:
    answer, logged, report, _ = runs
    breaking = [n for n in model_names(MODULE) if _torch_lines(answer, logged, n)]
    assert len(breaking) >= len(model_names(MODULE)) // 2, "the corpus lost its graph breaks"


@pytest.mark.parametrize("name", model_names(MODULE))
def test_breaks_are_torchs_breaks_at_the_same_lines(runs: tuple[Any, ...], name: str) -> None:
    answer, logged, report, _ = runs
    if name == "ThirdPartyInside" and importlib.util.find_spec("transformers") is None:
        pytest.skip("needs transformers")
    target = report.targets[name]
    assert target["status"] == "traced", target
    findings = report.findings(name, "FXS601")
    places = [(f["file"], f["line"]) for f in findings]
    assert len(places) == len(set(places)), f"one finding per place: {findings}"
    assert {shown_line(f) for f in findings} == _torch_lines(answer, logged, name), findings
    assert target["analyses"]["compile"]["counts"]["breaks"] == len(findings)
    assert target["analyses"]["compile"]["counts"]["graphs"] == answer["models"][name]["graphs"]


@pytest.mark.parametrize("name", model_names(MODULE))
def test_each_break_carries_torchs_graph_break_type(runs: tuple[Any, ...], name: str) -> None:
    answer, logged, report, _ = runs
    if name == "ThirdPartyInside" and importlib.util.find_spec("transformers") is None:
        pytest.skip("needs transformers")
    types = registry_types()
    by_line: dict[int, str] = {}
    for f in report.findings(name, "FXS601"):
        by_line[shown_line(f)] = by_line.get(shown_line(f), "") + "\n" + f["message"]
    for record in logged.get(name, {}).get("breaks", []):
        named = [line.strip() for line in record["text"].splitlines() if line.strip() in types]
        if named:  # torch named a registered type: the finding at that line says it
            assert named[0] in by_line[record["line"]], (named[0], by_line)


@pytest.mark.parametrize("name", model_names(MODULE))
def test_recompilations_are_torchs(runs: tuple[Any, ...], name: str) -> None:
    answer, logged, report, root = runs
    if name == "ThirdPartyInside" and importlib.util.find_spec("transformers") is None:
        pytest.skip("needs transformers")
    recompiled = {(Path(r["file"]).name, (_RESUME_RE.match(r["name"]) or r)["name"])
                  for r in logged.get(name, {}).get("recompiles", [])}
    findings = report.findings(name, "FXS602")
    assert len(findings) == len(recompiled), (findings, recompiled)
    for _, function in recompiled:
        assert any(f"`{function}`" in f["message"] for f in findings), (function, findings)
    for f in findings:
        assert "guard failed: " in f["message"] and f["hint"]
    assert report.targets[name]["analyses"]["compile"]["counts"]["recompiles"] == len(findings)


def test_a_break_inside_a_library_is_anchored_at_the_user_line(runs: tuple[Any, ...]) -> None:
    answer, logged, report, root = runs
    if importlib.util.find_spec("transformers") is None:
        pytest.skip("needs transformers")
    findings = report.findings("ThirdPartyInside", "FXS601")
    assert findings and all(Path(f["file"]).is_absolute() and "transformers" in f["file"] for f in findings)
    marker = next(i for i, line in enumerate((root / f"{MODULE}.py").read_text().splitlines(), 1)
                  if line.rstrip().endswith("# FXS601 transformers"))
    assert {f["anchor"]["line"] for f in findings} == {marker}
    assert all(f["anchor"]["file"] == f"{MODULE}.py" for f in findings)


def test_compiled_graphs_are_in_the_report_with_the_break_that_ended_them(tmp_path: Path) -> None:
    root = workspace(tmp_path / "ws", MODULE, ["fx", "compile"])
    report = run_check(root, "--graphs", timeout=1200)
    target = report.targets["DataDependentBranch"]
    compiled = [g for g in target["graphs"] if g.get("analysis") == "compile"]
    assert len(compiled) == target["analyses"]["compile"]["counts"]["graphs"] == 2
    (break_line,) = {shown_line(f) for f in report.findings("DataDependentBranch", "FXS601")}
    ends = compiled[0]["ends"]
    assert (ends["file"], ends["line"]) == (f"{MODULE}.py", break_line) and ends["reason"] in registry_types()
    assert "ends" not in compiled[-1]
    assert break_line in {n.get("line") for n in compiled[0]["nodes"]}
    assert {n.get("file") for n in compiled[0]["nodes"]} <= {None, f"{MODULE}.py"} | {
        n["file"] for n in compiled[0]["nodes"] if Path(n.get("file") or "x").is_absolute()}
    # fx's graphs stay next to them, and the node count is fx's alone
    clean = report.targets["Clean"]
    fx = [g for g in clean["graphs"] if g.get("analysis", "fx") == "fx"]
    assert fx and clean["nodes"] == sum(len(g["nodes"]) for g in fx)
    assert [g.get("analysis") for g in clean["graphs"]].count("compile") == clean["analyses"]["compile"]["counts"]["graphs"] == 1
