"""A target's two phases without a worker: which targets are split, how each phase is keyed (a
change of one phase's settings keeps the other's cache entries), and how the outcomes merge."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import MappingProxyType

from fxscope.engine.engine import Engine
from fxscope.engine.phases import analysable, merge, split
from fxscope.model import Finding, Location, TargetOutcome
from fxscope.model.analysis import AnalysisSummary
from fxscope.project.config import Config, TargetConfig


def _config(root: Path, **fields) -> Config:
    return Config(root=root, analyses=("fx", "compile", "export"), **fields)


def test_a_target_is_split_when_it_runs_fx_and_more(tmp_path: Path) -> None:
    config = _config(tmp_path, targets=(TargetConfig("only-fx", "m:f", analyses=("fx",)),
                                        TargetConfig("only-export", "m:g", analyses=("export",))))
    assert split(config, "m.py::Net") == ("compile", "export")
    assert split(config, "only-fx") == () and split(config, "only-export") == ()


def test_each_phase_is_keyed_by_its_own_settings(tmp_path: Path) -> None:
    base = _config(tmp_path)
    strict = dataclasses.replace(base, analysis_options=MappingProxyType({"export": {"strict": True}}))
    leaves = dataclasses.replace(base, leaf_modules=("m.Block",))
    fewer = dataclasses.replace(base, analyses=("fx", "compile"))
    with Engine(tmp_path, base) as a, Engine(tmp_path, strict) as b, Engine(tmp_path, leaves) as c, \
            Engine(tmp_path, fewer) as d:
        assert a.contexts["fx"] == b.contexts["fx"] == d.contexts["fx"]  # export's settings: not fx's
        assert a.contexts["analyses"] != b.contexts["analyses"] != d.contexts["analyses"]
        assert a.contexts["fx"] != c.contexts["fx"]  # the workspace's own settings key both
        assert len({a.contexts["all"], a.contexts["fx"], a.contexts["analyses"]}) == 3


def _finding(code: str, line: int) -> Finding:
    return Finding(code, "error", f"{code} here", Location("m.py", line))


def test_merged_outcome_keeps_fx_and_adds_the_analyses_once() -> None:
    fx = TargetOutcome("failed", nodes=5, findings=(_finding("FXS101", 7),), files={"m.py": "a"},
                       warnings=("w",))
    later = TargetOutcome("traced", findings=(_finding("FXS601", 7),), files={"m.py": "a", "lib.py": "b"},
                          warnings=("w", "v"), analyses=MappingProxyType({"compile": AnalysisSummary(False, "1 break")}),
                          inputs_for=("compile",))
    assert analysable(fx)
    merged = merge(fx, later, ("compile",))
    assert (merged.status, merged.nodes) == ("failed", 5)
    assert [f.code for f in merged.findings] == ["FXS101", "FXS601"]
    assert dict(merged.files) == {"m.py": "a", "lib.py": "b"} and merged.warnings == ("w", "v")
    assert list(merged.analyses) == ["compile"] and merged.inputs_for == ("compile",)


def test_a_faulted_analyses_phase_keeps_fx_and_says_so() -> None:
    fx = TargetOutcome("traced", nodes=5)
    died = TargetOutcome("error", findings=(_finding("FXS403", 9),), fault="timeout")
    merged = merge(fx, died, ("compile", "export"))
    assert merged.status == "error" and merged.fault == "timeout" and merged.nodes == 5
    (finding,) = merged.findings
    assert finding.code == "FXS403" and finding.message.startswith("the compile and export analysis did not finish")
    assert not analysable(TargetOutcome("error", findings=(_finding("FXS402", 1),)))
    assert not analysable(TargetOutcome("skipped")) and not analysable(died)
