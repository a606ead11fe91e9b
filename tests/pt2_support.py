"""Helpers of the compile/export agreement tests: a workspace holding one corpus module with a
factory target per model, the real CLI's report on it, and torch's own answer (tests/pt2_truth.py
run in a fresh process)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from engine_support import CheckRun, run_check

MODELS_DIR = Path(__file__).resolve().parent / "models" / "pt2"
#: A model module whose class fx fails on, torch.compile breaks on and torch.export refuses (a branch
#: on a tensor's value, the line marked BRANCH), built from a test's call ``Encoder(3, 4)``; the
#: inferred-input and two-phase tests add classes after it.
ENCODER_MODULE = '''import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, in_ch, width):
        super().__init__()
        self.conv = nn.Conv2d(in_ch, width, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        if y.mean() > 0:  # BRANCH
            y = y * 2
        return y
'''
TRUTH = Path(__file__).resolve().parent / "pt2_truth.py"


def model_names(module: str) -> list[str]:
    """The class names of a corpus module's ``MODELS`` tuple (read from its source, not imported)."""
    tree = ast.parse((MODELS_DIR / f"{module}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "MODELS" for t in node.targets):
            assert isinstance(node.value, ast.Tuple)
            return [elt.id for elt in node.value.elts if isinstance(elt, ast.Name)]
    raise AssertionError(f"{module} has no MODELS")


def workspace(root: Path, module: str, analyses: list[str], settings: str = "") -> Path:
    """``root`` holding a copy of ``tests/models/<module>.py`` and a pyproject.toml with one factory
    target per model (the class itself as the factory; ``inputs = { x = [2, 4] }``)."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(MODELS_DIR / f"{module}.py", root / f"{module}.py")
    tables = "".join(textwrap.dedent(f"""
        [tool.fxscope.targets.{name}]
        factory = "{module}:{name}"
        inputs = {{ x = [2, 4] }}
        analyses = {json.dumps(analyses)}
        """) for name in model_names(module))
    (root / "pyproject.toml").write_text(f"[tool.fxscope]\nauto-targets = false\ntimeout = 240\n{settings}\n{tables}")
    return root


def check(root: Path) -> CheckRun:
    """fxscope's report on the workspace (the real CLI, its worker and cache)."""
    return run_check(root, "--no-cache", timeout=1200)


def truth(root: Path, kind: str, module: str, *flags: str) -> tuple[dict[str, Any], str]:
    """torch's answer for the workspace's copy of ``module`` (parsed stdout) and its log (stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(root)
    env["TORCH_LOGS"] = "graph_breaks,recompiles"
    scratch = root.parent / f"{root.name}-torch-tmp"
    scratch.mkdir(exist_ok=True)
    env["TMPDIR"] = str(scratch)  # torch's compile caches (and their dynamic-size profile) start empty
    proc = subprocess.run([sys.executable, str(TRUTH), kind, module, *flags], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-6000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def registry_types() -> set[str]:
    """Every graph-break type of the installed torch's registry (``graph_break_registry.json``)."""
    import torch

    path = Path(torch.__file__).parent / "_dynamo" / "graph_break_registry.json"
    return {entry["Gb_type"] for versions in json.loads(path.read_text()).values() for entry in versions}


def shown_line(finding: dict[str, Any]) -> int:
    """The workspace line a finding is shown at: its own, or its anchor's when it lies outside."""
    anchor = finding.get("anchor")
    return int(anchor["line"] if anchor and os.path.isabs(finding["file"]) else finding["line"])
