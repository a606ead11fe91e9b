"""Analyses are plug-ins of the job: one registered from outside fxscope runs on a model built for it
alone (its model's state is what the constructor left, whatever the analysis before it ran), and
its summary lands in the result under its name."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.requires_torch

SCRIPT = """
    import json
    from pathlib import Path

    from fxscope.job.analyses import AnalysisResult, register
    from fxscope.job.run import run_job
    from fxscope.job.trace_job import TraceJob
    from fxscope.model.outcome import AnalysisSummary
    from fxscope.project.config import Config
    from fxscope.project.discovery import Target


    class Calls:
        device = "cpu"
        options = ()

        def __init__(self, name):
            self.name = name

        def warm_up(self):
            pass

        def run(self, built, inputs, context):
            model = built.model
            seen = {"calls_before": model.calls, "lazy_before": model.copy is None,
                    "weight": round(float(model.fc.weight.sum()), 6)}
            model(**inputs)
            model(**inputs)
            return AnalysisResult(summary=AnalysisSummary(True, "ran", details=seen))


    register(Calls("first"))
    register(Calls("second"))
    root = Path.cwd()
    config = Config(root=root, analyses=("first", "second"))
    target = Target("net", "factory", "models.py", 1, "models", None, factory="models:Net", inputs={"x": [2, 4]})
    print(json.dumps(run_job(TraceJob(str(root), config, target)).to_json()))
"""

MODELS = """
    import copy

    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.calls = 0
            self.copy = None

        def forward(self, x):
            self.calls += 1
            if self.copy is None:
                self.copy = copy.deepcopy(self.fc)
            return self.fc(x) - self.copy(x)
"""


def test_a_registered_analysis_gets_a_fresh_model_and_its_summary_is_reported(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(textwrap.dedent(MODELS))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "traced" and result.get("warnings", []) == []
    first, second = result["analyses"]["first"]["details"], result["analyses"]["second"]["details"]
    assert first == {**first, "calls_before": 0, "lazy_before": True}
    assert second == first  # not the model the first analysis ran twice; built the same way (same weights)
    assert result["files"].get("models.py")  # the job's dependencies are recorded as for any analysis
