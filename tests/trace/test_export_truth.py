"""The export analysis against torch itself, over the corpus of tests/models/pt2/export_failures.py.

For every model, torch is asked in a fresh process (tests/pt2_truth.py) what ``torch.export.export``
does with it (non-strict; strict; with a dynamic batch) and what ``torch.export.draft_export``
lists. fxscope's report on the same models and inputs must agree: a model exports exactly when
torch's export succeeds; otherwise the first finding is the error export raised (its message, at
the user line where it was raised), and the others are draft_export's problems at their lines.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pt2_support import check, model_names, shown_line, truth, workspace

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODULE = "export_failures"
EXPORT_CODES = ("FXS701", "FXS702", "FXS703", "FXS704")
MODES = {"non-strict": ("", ()), "strict": ("export-strict = true", ("--strict",)),
         "dynamic-batch": ("export-dynamic-batch = true", ("--dynamic-batch",))}


@pytest.fixture(scope="module", params=list(MODES))
def runs(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Any, Path]:
    settings, flags = MODES[request.param]
    root = workspace(tmp_path_factory.mktemp(request.param) / "ws", MODULE, ["export"], settings)
    answer, _ = truth(root, "export", MODULE, *flags)
    return answer, check(root), root


def _export_findings(report: Any, name: str) -> list[dict[str, Any]]:
    return [f for f in report.findings(name) if f["code"] in EXPORT_CODES]


@pytest.mark.parametrize("name", model_names(MODULE))
def test_a_model_exports_exactly_when_torch_exports_it(runs: tuple[Any, ...], name: str) -> None:
    answer, report, _ = runs
    expected = answer["models"][name]
    target = report.targets[name]
    assert target["analyses"]["export"]["ok"] is expected["exported"], (expected, target)
    assert (target["status"] == "failed") is (not expected["exported"])
    if expected["exported"]:
        assert _export_findings(report, name) == []


@pytest.mark.parametrize("name", model_names(MODULE))
def test_the_error_is_the_one_export_raises_at_its_line(runs: tuple[Any, ...], name: str) -> None:
    answer, report, _ = runs
    error = answer["models"][name]["error"]
    if error is None:
        return
    said = error["detail"] or error["first_line"]  # a constraint violation says what it is on its "- " line
    (first,) = [f for f in _export_findings(report, name) if said in f["message"]] or [None]
    assert first is not None, (error, _export_findings(report, name))
    if error["line"] is not None:
        assert shown_line(first) == error["line"], (error, first)
    assert first["severity"] == "error"


@pytest.mark.parametrize("name", model_names(MODULE))
def test_draft_export_problems_are_listed_at_their_lines(runs: tuple[Any, ...], name: str) -> None:
    answer, report, _ = runs
    expected = answer["models"][name]
    if expected["exported"]:
        return
    lines = {shown_line(f) for f in _export_findings(report, name)}
    torch_lines = {d["line"] for d in expected["draft"] if d["line"] is not None}
    if expected["error"]["line"] is not None:
        torch_lines.add(expected["error"]["line"])
    assert lines == torch_lines, (lines, expected)
    assert report.targets[name]["analyses"]["export"]["counts"]["problems"] == len(_export_findings(report, name))


def test_the_corpus_fails_to_export_in_each_way(runs: tuple[Any, ...]) -> None:
    answer, report, _ = runs
    failing = [n for n, m in answer["models"].items() if not m["exported"]]
    assert failing, "the corpus lost its export failures"
