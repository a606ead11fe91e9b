"""A target's two phases through the real CLI: with ``analyses = ["fx", "compile", "export"]`` each
target's fx phase and its compile/export phase are jobs of their own, cached on their own, and
``fxscope check`` reports them merged: fx's findings and the analyses' next to each other, each
once; an import failure once (the fx phase's; no analyses phase runs); a target whose analyses
phase crashes keeps its fx findings and gets one finding that says its analyses did not finish;
a second check serves both phases from the cache; ``--shard`` keeps a target's phases together."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import jsonschema
import pytest

from engine_support import SCHEMA, locate, run_check, write_tree
from pt2_support import ENCODER_MODULE

pytestmark = [pytest.mark.requires_torch, pytest.mark.slow]

MODELS = ENCODER_MODULE

CRASHY = """
    import os

    import torch
    from torch import nn


    class Crashy(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            if isinstance(x, torch.Tensor) and x.device.type == "cpu":
                os._exit(3)  # only on real tensors: the compile/export phase's process dies
            n = len(x)  # LEN
            return self.fc(x) * n
"""

BROKEN = """
    import not_a_module_anywhere  # IMPORT
    from torch import nn


    class Broken(nn.Module):
        def forward(self, x):
            return x
"""

TEST = """
    import torch
    from models import Encoder


    def test_encoder():
        enc = Encoder(3, 4)
        enc(torch.randn(2, 3, 8, 8))
"""

PYPROJECT = """
    [tool.fxscope]
    timeout = 240
    analyses = ["fx", "compile", "export"]
"""


def _codes(run, target: str) -> Counter:
    return Counter(f["code"] for f in run.findings(target))


def _stable(run) -> dict:
    """The report without what differs between two runs of the same check."""
    return {t["id"]: (t["status"], sorted(json.dumps({k: v for k, v in f.items() if k != "scopes"}, sort_keys=True)
                                          for f in run.findings(t["id"])),
                      json.dumps({k: {kk: vv for kk, vv in v.items() if kk != "duration_ms"}
                                  for k, v in (t.get("analyses") or {}).items()}, sort_keys=True),
                      json.dumps(t.get("inputs"), sort_keys=True))
            for t in run.report["targets"]}


def test_both_phases_merge_once_each_and_are_cached(tmp_path: Path):
    root = tmp_path / "ws"
    write_tree(root, {"models.py": MODELS, "crashy.py": CRASHY, "broken.py": BROKEN,
                      "tests/test_models.py": TEST, "pyproject.toml": PYPROJECT})
    first = run_check(root, timeout=900)
    jsonschema.validate(first.report, json.loads(SCHEMA.read_text()))
    targets = first.targets

    encoder = targets["models.py::Encoder"]
    branch, _ = locate(root, "models.py", "BRANCH")
    codes = _codes(first, encoder["id"])
    assert codes["FXS101"] == 1 and codes["FXS601"] >= 1 and codes["FXS701"] >= 1, first.findings(encoder["id"])
    assert {f["line"] for f in first.findings(encoder["id"]) if f["code"] in ("FXS101", "FXS601", "FXS701")} == {branch}
    assert set(encoder["analyses"]) == {"compile", "export"} and not encoder["cached"]
    assert encoder["inputs"]["specs"] == {"x": {"shape": [2, 3, 8, 8], "dtype": "float32"}}

    crashy = targets["crashy.py::Crashy"]
    length, _ = locate(root, "crashy.py", "LEN")
    assert [f["line"] for f in first.findings(crashy["id"], "FXS103")] == [length]  # fx's finding is kept
    died = first.findings(crashy["id"], "FXS404")
    assert len(died) == 1 and "compile and export analysis did not finish" in died[0]["message"], died
    assert crashy["status"] == "error" and not crashy.get("analyses")

    broken = targets["broken.py::Broken"]
    assert _codes(first, broken["id"]) == Counter({"FXS402": 1}) and broken["status"] == "error"

    second = run_check(root, timeout=300)
    assert not second.uncached()
    assert _stable(second) == _stable(first)

    merged: dict = {}
    for i in (1, 2):
        shard = run_check(root, "--shard", f"{i}/2", timeout=300)
        assert not shard.uncached()
        merged.update(_stable(shard))
    assert merged == _stable(first)
