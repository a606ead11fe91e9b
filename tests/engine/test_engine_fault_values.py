"""A worker fault's fields are read strictly: the job's own process (model code) writes part of a
fault, so any JSON there gives a located FXS404 (a malformed one: a crash that says so), never an
internal error of fxscope."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from engine_support import locate, run_check, write_tree
from fxscope.engine.faults import cacheable, fault_result, read_fault
from fxscope.model.fault import Fault, Frame

FALLBACK = {"file": "/ws/m.py", "line": 4}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
fault_dicts = st.fixed_dictionaries(
    {"fault": st.sampled_from(["exception", "exit", "crash", "timeout", "cancelled", "bogus"]) | json_values},
    optional={key: json_values | st.lists(st.fixed_dictionaries(
        {"file": json_values | st.just("/ws/m.py"), "line": json_values}), max_size=3)
        for key in ("message", "type", "exit_code", "signal", "signal_name", "timeout", "traceback",
                    "stack", "output")},
)


@settings(max_examples=300, deadline=None)
@given(fault_dicts)
def test_any_fault_dict_gives_one_located_fxs404_or_fxs403(raw: dict) -> None:
    outcome = fault_result(read_fault(raw), FALLBACK, "/ws")
    (finding,) = outcome.findings
    assert finding.code in ("FXS403", "FXS404") and outcome.status == "error" and outcome.fault
    assert finding.location.file == "/ws/m.py" and isinstance(finding.location.line, int) and finding.location.line >= 1
    assert isinstance(finding.message, str)


def test_well_formed_fields_are_kept_and_the_innermost_workspace_frame_wins() -> None:
    fault = read_fault({
        "fault": "exception", "type": "ValueError", "message": "bad", "output": "printed\n",
        "traceback": [{"file": "/ws/m.py", "line": 9, "name": "forward"}, {"file": "/ws/m.py", "line": None, "name": "f"},
                      {"file": "/lib/site-packages/x.py", "line": 3, "name": "g"}],
    })
    assert fault.traceback == (Frame("/ws/m.py", 9, "forward"), Frame("/ws/m.py", None, "f"),
                               Frame("/lib/site-packages/x.py", 3, "g"))
    outcome = fault_result(fault, FALLBACK, "/ws")
    assert outcome.output == "printed\n" and outcome.fault == "exception"
    assert (outcome.findings[0].location.line, outcome.findings[0].message) == (
        9, "the tracing process failed: ValueError: bad")


def test_a_malformed_fault_is_a_crash_that_says_so() -> None:
    fault = read_fault({"fault": "exception", "type": "ValueError", "traceback": [{"file": "/ws/m.py", "line": "9"}]})
    assert fault.kind == "crash" and "not a well-formed fault" in (fault.message or "")
    assert not cacheable(fault)  # nothing was learnt about the model
    assert fault_result(fault, FALLBACK, "/ws").findings[0].location.line == 4


def test_only_faults_of_the_jobs_own_process_are_cached() -> None:
    assert [cacheable(Fault(kind)) for kind in ("exception", "exit", "timeout", "cancelled")] == [
        True, True, True, False]
    assert not cacheable(Fault("crash", message="the worker died"))
    assert cacheable(Fault("crash", exit_code=3)) and cacheable(Fault("crash", signal=9))


HOSTILE = {
    "pyproject.toml": "[tool.fxscope]\n",
    "m.py": """
        import json
        from torch import nn

        _dumps = json.dumps


        def _forged(obj, *args, **kwargs):  # the result file then holds a malformed fault
            if isinstance(obj, dict) and "status" in obj:
                return _dumps({"fault": "exception", "type": ["x"], "message": {"a": 1},
                               "traceback": [1, "x", {"file": "m.py", "line": -2}, {"file": 3, "line": "abc"}]})
            return _dumps(obj, *args, **kwargs)


        json.dumps = _forged


        class Forger(nn.Module):  # MARK class
            def forward(self, x):
                return x + 1
        """,
}


def test_a_model_that_forges_a_malformed_fault_gets_a_finding_not_an_internal_error(tmp_path: Path) -> None:
    write_tree(tmp_path, HOSTILE)
    run = run_check(tmp_path)
    (finding,) = run.findings("m.py::Forger")
    assert finding["code"] == "FXS404"
    assert (finding["file"], finding["line"]) == ("m.py", locate(tmp_path, "m.py", "MARK class")[0])
    assert run.targets["m.py::Forger"]["status"] == "error"
