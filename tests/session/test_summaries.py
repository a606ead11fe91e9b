"""A class's summary names only the analyses that ran on its inferred inputs (not an analysis that
ran on the meta device, which has a summary too), and says which analyses still run."""

from __future__ import annotations

from types import MappingProxyType

from fxscope.model import ClassSummary
from fxscope.model.analysis import AnalysisSummary
from fxscope.model.inputs import InferredInputs, TensorShape
from fxscope.model.outcome import TargetOutcome
from fxscope.project.discovery import Target
from fxscope.session.summaries import class_summary

TARGET = Target("m.py::Net", "class", "m.py", 3, "m", "Net")
INPUTS = InferredInputs((("x", TensorShape((2, 3))),), "structure", text="its first layer")


def _outcome(**fields) -> TargetOutcome:
    analyses = {"meta-lint": AnalysisSummary(True, "clean"), "compile": AnalysisSummary(True, "1 graph")}
    body = TargetOutcome("traced", nodes=4, analyses=MappingProxyType(analyses), inputs=INPUTS, **fields)
    return TargetOutcome.from_json(body.to_json(), target=TARGET.id)  # as the cache gives it back


def test_only_the_analyses_that_ran_on_the_inputs_are_named() -> None:
    summary = class_summary("m.py", 3, ("Net", "m.Net"), TARGET, _outcome(inputs_for=("compile",)), (), (), False)
    assert summary.inputs == "inputs (2, 3) from its first layer"
    assert summary.inputs_for == ("compile",) and set(summary.analyses) == {"meta-lint", "compile"}
    assert ClassSummary.from_json(summary.to_json()) == summary


def test_the_analyses_still_running_are_said_once_fx_answered() -> None:
    outcome = TargetOutcome("traced", nodes=4)
    running = class_summary("m.py", 3, ("Net", "m.Net"), TARGET, outcome, (), (), False, None, ("compile", "export"))
    assert running.status == "traced" and running.analysing == ("compile", "export")
    pending = class_summary("m.py", 3, ("Net", "m.Net"), TARGET, outcome, (), (), True, None, ("compile", "export"))
    assert pending.status == "pending" and pending.analysing == ()
    assert ClassSummary.from_json(running.to_json()) == running
