"""`fxscope check` text output on a first run: info findings summarised in one line per code
unless asked for, import failures naming what they blocked, no importlib frames in `via:`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine_support import cli_env, write_tree

pytestmark = pytest.mark.requires_torch

WORKSPACE = {
    "pyproject.toml": "[tool.fxscope]\ntimeout = 60\n",
    "common.py": """
        import torch

        SCALE = undefined_name  # MARK broken
        """,
    "first.py": """
        from torch import nn

        from common import SCALE


        class First(nn.Module):
            def forward(self, x):
                return x * SCALE
        """,
    "second.py": """
        from torch import nn

        import common


        class Second(nn.Module):
            def forward(self, x):
                return x * common.SCALE
        """,
    "layers.py": """
        from torch import nn


        class NeedsDim(nn.Module):
            def __init__(self, knob):  # names that say nothing: fxscope cannot guess a value
                super().__init__()
                self.fc = nn.Linear(*knob)  # a pair: no int is guessed for it

            def forward(self, x):
                return self.fc(x)


        class NeedsHeads(nn.Module):
            def __init__(self, salt):
                super().__init__()

            def forward(self, x):
                return x
        """,
}


def check_text(root: Path, *args: str, rc: int = 1) -> str:
    proc = subprocess.run([sys.executable, "-m", "fxscope", "check", ".", "--color", "never", *args],
                          cwd=root, env=cli_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == rc, proc.stderr
    return proc.stdout


def test_first_run_text_output(tmp_path: Path) -> None:
    write_tree(tmp_path, WORKSPACE)
    out = check_text(tmp_path)

    # info findings: one line for the code, not a block per class
    assert "FXS405" not in out.replace("(FXS405; --show-info lists them)", "")
    assert ("2 classes need constructor arguments: `fxscope init` writes factories for them "
            "(FXS405; --show-info lists them)") in out

    # one failing import: where it fails, what it blocked, no importlib frames in the chain
    assert out.count("common.py:3:") == 1, out
    assert "blocked: 2 targets (first.py::First, second.py::Second) in first.py, second.py" in out
    assert "<frozen" not in out
    assert "via: first.py:3" in out or "via: second.py:3" in out

    listed = check_text(tmp_path, "--show-info")
    assert listed.count(": FXS405 ") == 2 and "--show-info lists them" not in listed
    selected = check_text(tmp_path, "--select", "FXS405", rc=0)  # info does not fail
    assert selected.count(": FXS405 ") == 2 and "FXS402" not in selected
